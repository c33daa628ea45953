package monitoring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// baseline is how long each scenario's healthy scrapes are held before the
// fault's: longer than any alert's `for`, so that an alert that fires on a
// healthy system fails the test.
const baseline = 20 * time.Minute

// fireEnv is what the scenarios share: one API server and one manager
// with leader election, scraped as the chart's ServiceMonitor would.
type fireEnv struct {
	env        *kubetest.Env
	kubeconfig string
	manager    *manager
	target     target
	leaderID   string
	alerts     map[string]query
}

// TestAlertsFire: every alert of the chart's PrometheusRule fires on the
// fault it is for, and not before. Each scenario makes the fault for real
// (a Redis server killed, an unsafe eviction policy, a lease taken away, a
// waiting line that grows, a fence counter set back, a manager without the
// rights to write status, a manager that cannot take the leader election
// Lease, no manager at all) against real redis-servers, a real API server
// and the manager binary, and scrapes the real metrics before and during
// the fault. The scrapes are written into a Prometheus TSDB, the healthy
// one held for 20 minutes and then the fault's for longer than the alert's
// `for` (real scrapes, at the times a Prometheus would have taken them had
// the state lasted; the test cannot wait out 15 minutes), and Prometheus's
// own rule engine evaluates the rendered rule every 30 s.
func TestAlertsFire(t *testing.T) {
	f := newFireEnv(t)
	scenarios := []struct {
		alert string
		// run makes the scrapes: healthy until faultAt, the fault's until end.
		run func(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration)
	}{
		{"RedleaseLockNotReady", lockNotReady},
		{"RedleaseStoreNotReady", storeNotReady},
		{"RedleaseUnsafeRedisSettings", unsafeSettings},
		{"RedleaseLeasesLost", leasesLost},
		{"RedleaseWaitersGrowing", waitersGrowing},
		{"RedleaseFenceFloorRaised", fenceFloorRaised},
		{"RedleaseReconcileErrors", reconcileErrors},
		{"RedleaseManagerNotLeading", managerNotLeading},
		{"RedleaseManagerAbsent", managerAbsent}, // last: it stops the manager
	}
	tested := map[string]bool{}
	for _, sc := range scenarios {
		tested[sc.alert] = true
		t.Run(sc.alert, func(t *testing.T) {
			a, ok := f.alerts[sc.alert]
			if !ok {
				t.Fatalf("the chart renders no alert %s", sc.alert)
			}
			tl := newTimeline(t)
			faultAt, end := sc.run(t, f, tl)
			at, fired := tl.firing(a, end)
			switch {
			case !fired:
				t.Errorf("%s did not fire within %v of its fault", sc.alert, end-faultAt)
			case at < faultAt:
				t.Errorf("%s fired at +%v, before its fault (+%v)", sc.alert, at, faultAt)
			default:
				t.Logf("%s fired %v after its fault began (for: %q)", sc.alert, at-faultAt, a.hold)
			}
		})
	}
	for name := range f.alerts {
		if !tested[name] {
			t.Errorf("the chart's alert %s has no scenario here", name)
		}
	}
}

func newFireEnv(t *testing.T) *fireEnv {
	t.Helper()
	f := &fireEnv{alerts: map[string]query{}}
	for _, q := range chartQueries(t) {
		if q.alert != "" {
			f.alerts[q.alert] = q
		}
	}
	job := regexp.MustCompile(`job="([^"]+)"`).FindStringSubmatch(f.alerts["RedleaseManagerAbsent"].expr)
	id := regexp.MustCompile(`name="([^"]+)"`).FindStringSubmatch(f.alerts["RedleaseManagerNotLeading"].expr)
	if job == nil || id == nil {
		t.Fatalf("the manager alerts name no job or Lease: %q, %q", f.alerts["RedleaseManagerAbsent"].expr, f.alerts["RedleaseManagerNotLeading"].expr)
	}
	f.leaderID = id[1]
	f.env = kubetest.Start(t)
	f.kubeconfig = f.env.KubeconfigFile(t)
	f.manager = startManager(t, f.kubeconfig, "--leader-elect", "--leader-election-namespace="+f.env.Namespace(t), "--leader-election-id="+f.leaderID)
	f.target = target{job: job[1], namespace: "redlease-system", instance: "manager-0"}
	f.until(t, f.manager, "the manager leads", func(v model.Vector) bool {
		return value(v, "leader_election_master_status", map[string]string{"name": f.leaderID}) == 1
	})
	return f
}

// until scrapes m until ok holds of a scrape, and returns that scrape.
func (f *fireEnv) until(t *testing.T, m *manager, what string, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	var last model.Vector
	locktest.Eventually(t, time.Minute, what, func() error {
		last = f.target.scrape(t.Context(), m.metrics)
		if !ok(last) {
			return fmt.Errorf("not in the manager's metrics yet")
		}
		return nil
	})
	return last
}

// holdThenFault holds the healthy scrape for the baseline, then the
// fault's for the alert's `for` and 5 minutes more, and returns the end.
func (f *fireEnv) holdThenFault(t *testing.T, tl *timeline, alert string, healthy, fault model.Vector) (faultAt, end time.Duration) {
	t.Helper()
	hold, err := model.ParseDuration(f.alerts[alert].hold)
	if err != nil {
		hold = 0
	}
	end = baseline + time.Duration(hold) + 5*time.Minute
	tl.hold(0, baseline, healthy)
	tl.hold(baseline, end, fault)
	return baseline, end
}

func (f *fireEnv) createLock(t *testing.T, ns, name string, spec v1alpha1.DistributedLockSpec) {
	t.Helper()
	if spec.TTL == nil {
		spec.TTL = &metav1.Duration{Duration: 5 * time.Second}
	}
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := f.env.Client.Create(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
}

func standalone(addr string) v1alpha1.DistributedLockSpec {
	return v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}}
}

func lockSeries(ns, name string) map[string]string {
	return map[string]string{"namespace": ns, "name": name}
}

// lockNotReady: the lock's Redis is killed.
func lockNotReady(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	f.createLock(t, ns, "settle", standalone(srv.Addr()))
	ready := func(want float64) func(model.Vector) bool {
		return func(v model.Vector) bool {
			return value(v, "redlease_controller_lock_ready", lockSeries(ns, "settle")) == want
		}
	}
	healthy := f.until(t, f.manager, "the lock Ready", ready(1))
	srv.Kill()
	fault := f.until(t, f.manager, "the lock not Ready", ready(0))
	return f.holdThenFault(t, tl, "RedleaseLockNotReady", healthy, fault)
}

// storeNotReady: a LockStore's Redis is killed.
func storeNotReady(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	store := &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}
	if err := f.env.Client.Create(t.Context(), store); err != nil {
		t.Fatal(err)
	}
	ready := func(status string) func(model.Vector) bool {
		return func(v model.Vector) bool {
			return value(v, "redlease_lockstore_condition", map[string]string{"namespace": ns, "name": "team", "condition": "Ready", "status": status}) == 1
		}
	}
	healthy := f.until(t, f.manager, "the store Ready", ready("True"))
	srv.Kill()
	fault := f.until(t, f.manager, "the store not Ready", ready("False"))
	return f.holdThenFault(t, tl, "RedleaseStoreNotReady", healthy, fault)
}

// unsafeSettings: the lock's Redis is switched to an eviction policy that
// can drop a held key.
func unsafeSettings(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	f.createLock(t, ns, "settle", standalone(srv.Addr()))
	preflight := func(status string) func(model.Vector) bool {
		return func(v model.Vector) bool {
			return value(v, "redlease_distributedlock_condition", map[string]string{"namespace": ns, "name": "settle", "condition": "Preflight", "status": status}) == 1
		}
	}
	healthy := f.until(t, f.manager, "Preflight True", preflight("True"))
	if err := srv.Client(t).ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	fault := f.until(t, f.manager, "Preflight False", preflight("False"))
	return f.holdThenFault(t, tl, "RedleaseUnsafeRedisSettings", healthy, fault)
}

// leasesLost: a tenant's pod keeps losing its leases (their keys deleted
// under them), one a minute; its library metrics are scraped as the
// pod's.
func leasesLost(t *testing.T, _ *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	srv := redistest.StartStandalone(t)
	reg := prometheus.NewRegistry()
	locker, err := lock.New(srv.Client(t), lock.WithMetrics(reg), lock.WithTTL(time.Second), lock.WithIdentity("settler"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locker.Close() })
	pod := target{job: "tenant-pods", namespace: "billing", instance: "settler-0"}
	gather := func() model.Vector {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		v, err := pod.samples(fams, true)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	held, err := locker.Acquire(t.Context(), "billing/settle")
	if err != nil {
		t.Fatal(err)
	}
	tl.hold(0, baseline, gather())
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	const losses = 12
	for i := range losses {
		lease, err := locker.Acquire(t.Context(), "billing/settle")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Client(t).Del(t.Context(), "billing/settle").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lease.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the lease whose key was deleted was not lost")
		}
		tl.record(baseline+time.Duration(i)*time.Minute, gather())
	}
	return baseline, baseline + losses*time.Minute
}

// waitersGrowing: a lock's waiting line never empties for 30 minutes and
// then grows, from one waiter to three.
func waitersGrowing(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	f.createLock(t, ns, "settle", standalone(srv.Addr()))
	key := protocol.DefaultKey(ns, "settle")
	holder := newLocker(t, srv, "holder")
	if _, err := holder.Acquire(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	wait := func(who string) {
		l := newLocker(t, srv, who)
		go func() { _, _ = l.Acquire(ctx, key) }()
	}
	waiters := func(n float64) func(model.Vector) bool {
		return func(v model.Vector) bool { return value(v, "redlease_lock_waiters", lockSeries(ns, "settle")) == n }
	}
	wait("waiter-1")
	one := f.until(t, f.manager, "one waiter", waiters(1))
	wait("waiter-2")
	wait("waiter-3")
	three := f.until(t, f.manager, "three waiters", waiters(3))
	// One waiter for 40 minutes: a line that never empties but does not
	// grow must not fire. Then it grows.
	const steady = 40 * time.Minute
	tl.hold(0, steady, one)
	tl.hold(steady, steady+5*time.Minute, three)
	return steady, steady + 5*time.Minute
}

func newLocker(t *testing.T, srv *redistest.Server, identity string) *lock.Locker {
	t.Helper()
	l, err := lock.New(srv.Client(t), lock.WithTTL(5*time.Second), lock.WithIdentity(identity))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// fenceFloorRaised: the lock's fence counter is set below fences already
// handed out, as a failover that lost increments leaves it.
func fenceFloorRaised(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	f.createLock(t, ns, "settle", standalone(srv.Addr()))
	key := protocol.DefaultKey(ns, "settle")
	locker := newLocker(t, srv, "writer")
	var top uint64
	for range 3 {
		lease, err := locker.Acquire(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		top = lease.Fence()
		if err := lease.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	raised := func(v model.Vector) float64 { return value(v, "redlease_controller_fence_floor_raised_total", nil) }
	healthy := f.until(t, f.manager, "the fences seen", func(v model.Vector) bool {
		return value(v, "redlease_controller_lock_fence_high_water", lockSeries(ns, "settle")) >= float64(top)
	})
	if err := srv.Client(t).Set(t.Context(), protocol.FenceKey(key), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	fault := f.until(t, f.manager, "the floor raised", func(v model.Vector) bool { return raised(v) > max(raised(healthy), 0) })
	return f.holdThenFault(t, tl, "RedleaseFenceFloorRaised", healthy, fault)
}

// reconcileErrors: a manager whose ServiceAccount lost its rights to write
// status fails every reconcile of the locks it watches.
func reconcileErrors(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	ns, srv := f.env.Namespace(t), redistest.StartStandalone(t)
	const user = "system:serviceaccount:redlease-system:read-only-manager"
	f.grantWithoutStatusWrites(t, user)
	// The shared manager reconciles these locks too, and writes their
	// status. Were this manager's status the same, it would find nothing
	// to write, make no error, and the test would race the two. Denied
	// every Redis address (TEST-NET-1 only), it always wants another
	// status than the one written, and each reconcile tries to write it.
	m := startManager(t, f.env.KubeconfigAs(t, user), "--leader-elect=false", "--watch-namespaces="+ns, "--allowed-redis-cidrs=192.0.2.0/24")
	errorsOf := func(v model.Vector) float64 {
		return value(v, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "distributedlock"})
	}
	healthy := f.until(t, m, "the manager serving its metrics", func(v model.Vector) bool { return errorsOf(v) == 0 })
	tl.hold(0, baseline, healthy)
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		f.createLock(t, ns, name, standalone(srv.Addr()))
	}
	// The failures go on: the test takes a scrape each time there were
	// more errors and holds each for 10 minutes, the count flat between
	// them. Each lock's retries back off, doubling up to 1000 s (a real
	// failure that lasts makes an error at least every 17 minutes per
	// object); a change to a lock is reconciled at once, so the test
	// changes one to see the next error without waiting out the backoff.
	const scrapes, apart = 2, 10 * time.Minute
	end = baseline + scrapes*apart + 20*time.Minute
	last := errorsOf(healthy)
	for i := range scrapes {
		f.touch(t, ns, "a", i)
		v := f.until(t, m, "more reconcile errors", func(v model.Vector) bool { return errorsOf(v) > last })
		last = errorsOf(v)
		from, to := baseline+time.Duration(i)*apart, end
		if i < scrapes-1 {
			to = from + apart
		}
		tl.hold(from, to, v)
	}
	return baseline, end
}

// touch changes an annotation of the lock ns/name, which the controller
// reconciles at once.
func (f *fireEnv) touch(t *testing.T, ns, name string, n int) {
	t.Helper()
	var dl v1alpha1.DistributedLock
	if err := f.env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dl); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(dl.DeepCopy())
	metav1.SetMetaDataAnnotation(&dl.ObjectMeta, "test.redlease.io/touched", strconv.Itoa(n))
	if err := f.env.Client.Patch(t.Context(), &dl, patch); err != nil {
		t.Fatal(err)
	}
}

// grantWithoutStatusWrites binds user to the manager's ClusterRole
// (config/rbac/role.yaml) without its status writes.
func (f *fireEnv) grantWithoutStatusWrites(t *testing.T, user string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: "read-only-manager"}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		var kept []string
		for _, res := range r.Resources {
			if !regexp.MustCompile(`/status$`).MatchString(res) {
				kept = append(kept, res)
			}
		}
		if len(kept) > 0 {
			r.Resources = kept
			rules = append(rules, r)
		}
	}
	role.Rules = rules
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-only-manager"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if err := f.env.Client.Create(t.Context(), &role); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.env.Client.Delete(context.Background(), binding)
		_ = f.env.Client.Delete(context.Background(), &role)
	})
}

// managerNotLeading: the job's leading manager is gone and the one left
// answers but cannot take the leader election Lease, which another holder
// keeps renewing.
func managerNotLeading(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	leaseNS := f.env.Namespace(t)
	now := metav1.NewMicroTime(time.Now())
	held := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: f.leaderID},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-manager"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now}}
	if err := f.env.Client.Create(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	healthy := f.target.scrape(t.Context(), f.manager.metrics)
	standby := startManager(t, f.kubeconfig, "--leader-elect", "--leader-election-namespace="+leaseNS, "--leader-election-id="+f.leaderID)
	f.until(t, standby, "the standby serving its metrics", func(v model.Vector) bool { return value(v, "up", nil) == 1 })
	// Several of its tries at the Lease (every 2 s), all refused.
	time.Sleep(6 * time.Second)
	fault := f.target.scrape(t.Context(), standby.metrics)
	return f.holdThenFault(t, tl, "RedleaseManagerNotLeading", healthy, fault)
}

// managerAbsent: the manager stops; its scrapes fail.
func managerAbsent(t *testing.T, f *fireEnv, tl *timeline) (faultAt, end time.Duration) {
	healthy := f.target.scrape(t.Context(), f.manager.metrics)
	if value(healthy, "up", nil) != 1 {
		t.Fatal("the manager does not answer before it is stopped")
	}
	f.manager.stop()
	fault := f.target.scrape(t.Context(), f.manager.metrics)
	if value(fault, "up", nil) != 0 {
		t.Fatal("a stopped manager was scraped")
	}
	return f.holdThenFault(t, tl, "RedleaseManagerAbsent", healthy, fault)
}

// TestReconcileErrorsAlertOutlastsTheBackoff: an object that keeps failing
// is retried with controller-runtime's default backoff, which doubles up
// to 1000 s; at that pace (one error every 1000 s, for two hours) the
// chart's alert still fires, where the same rule over a 10-minute window
// never stays on for its 15 minutes.
func TestReconcileErrorsAlertOutlastsTheBackoff(t *testing.T) {
	var alert query
	for _, q := range chartQueries(t) {
		if q.alert == "RedleaseReconcileErrors" {
			alert = q
		}
	}
	if alert.expr == "" {
		t.Fatal("the chart renders no RedleaseReconcileErrors")
	}
	const backoff, lasting = 1000 * time.Second, 2 * time.Hour
	tl := newTimeline(t)
	errorsAt := func(at time.Duration) model.Vector {
		return model.Vector{{Metric: model.Metric{model.MetricNameLabel: "controller_runtime_reconcile_errors_total",
			"controller": "distributedlock", "job": "manager", "namespace": "redlease-system"},
			Value: model.SampleValue(at / backoff)}}
	}
	for at := time.Duration(0); at <= lasting; at += scrapeInterval {
		tl.record(at, errorsAt(at))
	}
	if _, fired := tl.firing(alert, lasting); !fired {
		t.Errorf("%s did not fire on an object failing every %v for %v", alert.where, backoff, lasting)
	}
	short := alert
	short.expr = strings.Replace(alert.expr, "[30m]", "[10m]", 1)
	if short.expr == alert.expr {
		t.Fatalf("the alert's window is not 30m: %s", alert.expr)
	}
	if _, fired := tl.firing(short, lasting); fired {
		t.Errorf("over a 10-minute window the alert fired too: the test no longer shows why the window is 30 minutes")
	}
}

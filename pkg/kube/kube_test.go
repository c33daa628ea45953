package kube_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// TestMain shares one API server and, after every test, fails the run if a
// goroutine outlived its Locker (the API server's own client connections
// aside).
func TestMain(m *testing.M) {
	code := kubetest.Main(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// podConfig returns a rest.Config that acts as a pod's ServiceAccount holding
// only the Role docs/library.md documents: get/list/watch on distributedlocks and
// get on the one Secret. The tests prove that Role is enough.
func podConfig(t *testing.T, env *kubetest.Env, ns string, secrets ...string) *rest.Config {
	t.Helper()
	ctx := t.Context()
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{"redlease.io"}, Resources: []string{"distributedlocks"}, Verbs: []string{"get", "list", "watch"},
	}}
	if len(secrets) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: secrets})
	}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "lock-user", Namespace: ns}, Rules: rules},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "lock-user", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "lock-user"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "worker", Namespace: ns}},
		},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:worker", ns)}
	return cfg
}

// createLock creates a DistributedLock and publishes status as the
// controller would (these tests exercise pkg/kube, not the controller).
func createLock(t *testing.T, env *kubetest.Env, ns, name string, spec v1alpha1.DistributedLockSpec, status v1alpha1.DistributedLockStatus) *v1alpha1.DistributedLock {
	t.Helper()
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := env.Client.Create(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	setStatus(t, env, dl, status)
	return dl
}

func setStatus(t *testing.T, env *kubetest.Env, dl *v1alpha1.DistributedLock, status v1alpha1.DistributedLockStatus) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(dl), dl); err != nil {
		t.Fatal(err)
	}
	dl.Status = status
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
}

func readyStatus(master string) v1alpha1.DistributedLockStatus {
	s := v1alpha1.DistributedLockStatus{Master: master}
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable, Message: "test"})
	return s
}

func newKubeLocker(t *testing.T, cfg *rest.Config, ns, name string, opts ...lock.Option) *kube.Locker {
	t.Helper()
	l, err := kube.NewLocker(t.Context(), cfg, ns, name, opts...)
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, kube.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// releaseAtEnd is the shared lease helper.
var releaseAtEnd = locktest.ReleaseAtEnd

func TestLockerUsesTheResourcesKeyAndSettings(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-auth"},
		StringData: map[string]string{"password": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	createLock(t, env, ns, "settle", v1alpha1.DistributedLockSpec{
		TTL: &metav1.Duration{Duration: 2 * time.Second},
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()},
			PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "redis-auth", Key: "password"}},
	}, readyStatus(srv.Addr()))

	l := newKubeLocker(t, podConfig(t, env, ns, "redis-auth"), ns, "settle", lock.WithIdentity("pod-a"))
	if l.Key() != ns+"/settle" {
		t.Fatalf("Key = %q, want the default <namespace>/<name>", l.Key())
	}
	lease, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	rc := srv.Client(t)
	if got := rc.Get(t.Context(), ns+"/settle").Val(); got != lease.Value() {
		t.Fatalf("Redis holds %q, want the lease's value", got)
	}
	if pttl := rc.PTTL(t.Context(), ns+"/settle").Val(); pttl <= 0 || pttl > 2*time.Second {
		t.Fatalf("PTTL = %v, want the resource's 2s TTL", pttl)
	}
	if lease.Fence() == 0 {
		t.Fatal("fencing is on by default but the lease has no fence")
	}
}

func TestNotReadyIsAClearErrorNotAHang(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	notReady := v1alpha1.DistributedLockStatus{}
	apimeta.SetStatusCondition(&notReady.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonEndpointUnreachable, Message: "127.0.0.1:1: connection refused"})
	createLock(t, env, ns, "down", v1alpha1.DistributedLockSpec{
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"127.0.0.1:1"}},
	}, notReady)
	l := newKubeLocker(t, podConfig(t, env, ns), ns, "down")
	start := time.Now()
	_, err := l.Acquire(context.Background()) // no deadline: must not hang
	if !errors.Is(err, kube.ErrNotReady) {
		t.Fatalf("Acquire = %v, want ErrNotReady", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Acquire took %v to report a resource that is not Ready", d)
	}
	t.Logf("error a user sees: %v", err)
}

// When the controller publishes a new master, the next acquisition goes
// there, while a lease held on the old master stays valid until released.
func TestLockerFollowsTheMasterInStatusWithoutDroppingHeldLeases(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	oldMaster, newMaster := redistest.StartStandalone(t), redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "moving", v1alpha1.DistributedLockSpec{
		TTL:   &metav1.Duration{Duration: time.Second},
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{oldMaster.Addr(), newMaster.Addr()}},
	}, readyStatus(oldMaster.Addr()))
	l := newKubeLocker(t, podConfig(t, env, ns), ns, "moving")
	held, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	setStatus(t, env, dl, readyStatus(newMaster.Addr()))
	key := ns + "/moving"
	deadline := time.Now().Add(20 * time.Second)
	for {
		lease, err := l.TryAcquire(t.Context())
		if err == nil {
			if got := newMaster.Client(t).Get(t.Context(), key).Val(); got != lease.Value() {
				t.Fatalf("new lease is not on the new master")
			}
			if err := lease.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			break
		}
		if !errors.Is(err, lock.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("acquisition after the master moved: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Several TTLs later the first lease is still held and renewed on the old master.
	time.Sleep(2 * time.Second)
	if err := held.Err(); err != nil {
		t.Fatalf("the lease held across the switch was dropped: %v", err)
	}
	if got := oldMaster.Client(t).Get(t.Context(), key).Val(); got != held.Value() {
		t.Fatal("the held lease's key is no longer on the old master")
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLockerRefusesToRebindWhileLeasesAreHeld (issue 10, item 4): the
// resource is deleted and re-created under the same name with another key
// while this process holds a lease on the old one. A lease on the new key
// now would make two holders of "the same lock"; TryAcquire refuses,
// Acquire waits until the old lease ends, then takes the new key.
func TestLockerRefusesToRebindWhileLeasesAreHeld(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	spec := func(key string) v1alpha1.DistributedLockSpec {
		return v1alpha1.DistributedLockSpec{Key: key, TTL: &metav1.Duration{Duration: time.Second},
			Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}
	}
	dl := createLock(t, env, ns, "moved", spec("jobs/old"), readyStatus(srv.Addr()))
	l := newKubeLocker(t, podConfig(t, env, ns), ns, "moved")
	held, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, held) // released below unless the test fails first

	if err := env.Client.Delete(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	createLock(t, env, ns, "moved", spec("jobs/new"), readyStatus(srv.Addr()))
	deadline := time.Now().Add(20 * time.Second)
	for l.Key() != "jobs/new" || apimeta.FindStatusCondition(l.Resource().Status.Conditions, v1alpha1.ConditionReady) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the Locker did not see the re-created resource: key %q", l.Key())
		}
		time.Sleep(20 * time.Millisecond)
	}

	rc := srv.Client(t)
	refusesToRebind(t, l, held, srv.Addr())
	if n := rc.Exists(t.Context(), "jobs/new").Val(); n != 0 {
		t.Fatal("the new key was taken while the old lease is held")
	}
	lease := rebindsOnceReleased(t, l, held)
	if lease.Key() != "jobs/new" || rc.Get(t.Context(), "jobs/new").Val() != lease.Value() {
		t.Fatalf("the lease after the rebinding is on %q, want jobs/new", lease.Key())
	}
	if n := rc.Exists(t.Context(), "jobs/old").Val(); n != 0 {
		t.Error("the old key is still held after its release")
	}
}

// refusesToRebind: while held (on the resource's old key) is held,
// TryAcquire fails at once with an ErrRebinding naming both keys and the
// server at addr, and Acquire waits until its context ends.
func refusesToRebind(t *testing.T, l *kube.Locker, held *lock.Lease, addr string) {
	t.Helper()
	lease, err := l.TryAcquire(t.Context())
	if err == nil {
		releaseAtEnd(t, lease)
		t.Fatalf("TryAcquire took %q while this process holds %q: two holders of one lock", lease.Key(), held.Key())
	}
	if !errors.Is(err, kube.ErrRebinding) {
		t.Fatalf("TryAcquire = %v, want ErrRebinding", err)
	}
	for _, want := range []string{`key "jobs/old"`, `key "jobs/new"`, addr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	t.Logf("error a user sees: %v", err)

	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if lease, err := l.Acquire(short); err == nil {
		releaseAtEnd(t, lease)
		t.Fatalf("Acquire took %q while this process holds %q", lease.Key(), held.Key())
	} else if !errors.Is(err, kube.ErrRebinding) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with a short deadline = %v, want ErrRebinding and DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("Acquire gave up after %v, before its context ended", d)
	}
}

// rebindsOnceReleased: Acquire waits for held to end (which stays renewed
// meanwhile), then returns a lease on the resource's new key, released when
// the test ends.
func rebindsOnceReleased(t *testing.T, l *kube.Locker, held *lock.Lease) *lock.Lease {
	t.Helper()
	type result struct {
		lease *lock.Lease
		err   error
	}
	got := make(chan result, 1)
	go func() {
		lease, err := l.Acquire(t.Context())
		got <- result{lease, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("Acquire returned (%v) while the old lease is held", r.err)
	case <-time.After(1500 * time.Millisecond): // longer than the TTL: the old lease is renewed meanwhile
	}
	if err := held.Err(); err != nil {
		t.Fatalf("the old lease was dropped: %v", err)
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("Acquire after the old lease ended: %v", r.err)
		}
		releaseAtEnd(t, r.lease)
		return r.lease
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire still waits after the old lease was released")
	}
	return nil
}

// A pod-like process follows a Sentinel failover: the next acquisition goes
// to the new master without a restart.
func TestLockerFollowsASentinelFailover(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	group := redistest.StartSentinel(t, 1)
	createLock(t, env, ns, "sentinel", v1alpha1.DistributedLockSpec{
		TTL: &metav1.Duration{Duration: 2 * time.Second},
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel,
			Sentinel: &v1alpha1.SentinelSpec{MasterName: group.MasterName, Addresses: group.SentinelAddrs()}},
	}, readyStatus(group.Master.Addr()))
	l := newKubeLocker(t, podConfig(t, env, ns), ns, "sentinel")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	before, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := before.Release(ctx); err != nil {
		t.Fatal(err)
	}
	newMaster, err := group.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var after *lock.Lease
	for after == nil { // during the switch the old master may still answer READONLY
		if after, err = l.Acquire(ctx); err != nil && ctx.Err() != nil {
			t.Fatalf("no acquisition after the failover: %v", err)
		}
	}
	releaseAtEnd(t, after)
	if got := group.ServerByAddr(newMaster).Client(t).Get(ctx, ns+"/sentinel").Val(); got != after.Value() {
		t.Fatalf("the lease after the failover is not on the new master %s", newMaster)
	}
	if after.Fence() <= before.Fence() {
		t.Fatalf("fence after failover %d not above %d", after.Fence(), before.Fence())
	}
}

func TestLockerOverRedlockNodes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	nodes := redistest.StartNodes(t, 3)
	addrs := []string{nodes[0].Addr(), nodes[1].Addr(), nodes[2].Addr()}
	createLock(t, env, ns, "quorum", v1alpha1.DistributedLockSpec{
		Key:     "jobs/quorum",
		Redis:   v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: addrs},
		Fencing: &v1alpha1.FencingSpec{Enabled: ptr.To(true)},
	}, readyStatus(""))
	l := newKubeLocker(t, podConfig(t, env, ns), ns, "quorum")
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	for i, n := range nodes {
		if got := n.Client(t).Get(t.Context(), "jobs/quorum").Val(); got != lease.Value() {
			t.Fatalf("node %d does not hold the lease", i)
		}
	}
}

func TestClosedLockerRefusesWork(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	createLock(t, env, ns, "closing", v1alpha1.DistributedLockSpec{
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}},
	}, readyStatus(srv.Addr()))
	l, err := kube.NewLocker(t.Context(), podConfig(t, env, ns), ns, "closing")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(lease.Err(), lock.ErrReleased) {
		t.Fatalf("lease after Close: %v, want released", lease.Err())
	}
	if _, err := l.TryAcquire(t.Context()); !errors.Is(err, kube.ErrClosed) || !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("TryAcquire after Close = %v, want kube.ErrClosed wrapping lock.ErrClosed", err)
	}
	if _, err := kube.NewLocker(t.Context(), podConfig(t, env, env.Namespace(t)), ns, "closing"); err == nil {
		t.Fatal("a ServiceAccount without access to the namespace could read the lock")
	}
}

// TLS: the handle trusts the CA from the resource's Secret and checks the
// certificate's server name.
func TestLockerOverTLS(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithTLS())
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-ca"},
		StringData: map[string]string{"ca.crt": string(srv.CACertPEM())}}); err != nil {
		t.Fatal(err)
	}
	createLock(t, env, ns, "tls", v1alpha1.DistributedLockSpec{
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()},
			TLS: &v1alpha1.TLSSpec{Enabled: true, ServerName: redistest.TLSServerName, CASecretRef: &v1alpha1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}}},
	}, readyStatus(srv.Addr()))
	l := newKubeLocker(t, podConfig(t, env, ns, "redis-ca"), ns, "tls")
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("TryAcquire over TLS: %v", err)
	}
	releaseAtEnd(t, lease)
	if got := srv.Client(t).Get(t.Context(), ns+"/tls").Val(); got != lease.Value() {
		t.Fatal("the lease is not on the TLS server")
	}
}

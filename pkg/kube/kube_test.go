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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/redisconn/certtest"
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
// only the Role docs/library.md documents and the chart's podRole renders
// (podrbac.Rules): get/list/watch on distributedlocks and get on
// the one Secret. The tests prove that Role is enough.
func podConfig(t *testing.T, env *kubetest.Env, ns string, secrets ...string) *rest.Config {
	t.Helper()
	ctx := t.Context()
	rules := podrbac.Rules(secrets...)
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
	user := fmt.Sprintf("system:serviceaccount:%s:worker", ns)
	env.WaitForAccess(t, user, ns, "list", v1alpha1.GroupVersion.Group, "distributedlocks")
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// credentialsSecret is the name of the credentials Secret the tests
// publish, as the controller would for a store named "shared".
const credentialsSecret = "redlease-shared"

// createLock creates a DistributedLock with spec; a spec naming neither a
// store nor inline servers gets the ClusterLockStore "shared" (which need
// not exist: these tests exercise pkg/kube, not the controller).
func createLock(t *testing.T, env *kubetest.Env, ns, name string, spec v1alpha1.DistributedLockSpec) *v1alpha1.DistributedLock {
	t.Helper()
	if spec.StoreRef == nil && spec.Redis.Mode == "" {
		spec.StoreRef = &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"}
	}
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := env.Client.Create(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	return dl
}

// publish does what the controller does for a Ready lock: it writes the
// credentials Secret with data (created or replaced; nil leaves it as it
// is, or absent), then the status naming it, with key and conn.
func publish(t *testing.T, env *kubetest.Env, dl *v1alpha1.DistributedLock, key string, conn v1alpha1.ConnectionStatus, data map[string][]byte) {
	t.Helper()
	if data != nil {
		writeSecret(t, env, dl.Namespace, data)
	}
	status := readyStatus()
	status.Key, status.Connection = key, &conn
	status.CredentialsSecretRef = &v1alpha1.LocalSecretReference{Name: credentialsSecret}
	if conn.Mode == v1alpha1.RedisModeRedlock {
		status.Quorum = int32(len(conn.Addresses)/2 + 1) //nolint:gosec // G115: a handful of test nodes
	}
	setStatus(t, env, dl, status)
}

// writeSecret creates or replaces the credentials Secret of ns.
func writeSecret(t *testing.T, env *kubetest.Env, ns string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: credentialsSecret}, Data: data}
	err := env.Client.Create(t.Context(), s)
	if apierrors.IsAlreadyExists(err) {
		err = env.Client.Update(t.Context(), s)
	}
	if err != nil {
		t.Fatal(err)
	}
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

// readyStatus is a status with only the Ready condition, True.
func readyStatus() v1alpha1.DistributedLockStatus {
	var s v1alpha1.DistributedLockStatus
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable, Message: "test"})
	return s
}

// standalone is the connection of one server.
func standalone(addr string) v1alpha1.ConnectionStatus {
	return v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}
}

// password is the data of a credentials Secret with a password for the
// default user.
func password(p string) map[string][]byte {
	return map[string][]byte{v1alpha1.CredentialsPassword: []byte(p)}
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

// TestLockerUsesTheStatusAndItsSecret: the key is status.key, the server
// status.connection's, the password the credentials Secret's, the lease
// settings the spec's.
func TestLockerUsesTheStatusAndItsSecret(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	dl := createLock(t, env, ns, "settle", v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: 2 * time.Second}})
	key := ns + "/settlement" // as under isolation ACL: not the spec's key, not <namespace>/<name>
	publish(t, env, dl, key, standalone(srv.Addr()), password("s3cret"))

	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "settle", lock.WithIdentity("pod-a"))
	if l.Key() != key {
		t.Fatalf("Key = %q, want status.key %q", l.Key(), key)
	}
	lease, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	onServer(t, srv, lease)
	if pttl := srv.Client(t).PTTL(t.Context(), key).Val(); pttl <= 0 || pttl > 2*time.Second {
		t.Fatalf("PTTL = %v, want the spec's 2s TTL", pttl)
	}
	if lease.Fence() == 0 {
		t.Fatal("fencing is on by default but the lease has no fence")
	}
}

// TestSemaphoreThroughTheResource: a DistributedLock with spec.permits 2
// gives each Acquire a permit of the semaphore at status.key: two holders
// at once, a third refused until one releases; InspectPermits names them.
func TestSemaphoreThroughTheResource(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	dl := createLock(t, env, ns, "exports", v1alpha1.DistributedLockSpec{Permits: 2})
	key := ns + "/exports"
	publish(t, env, dl, key, standalone(srv.Addr()), password("s3cret"))

	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "exports", lock.WithIdentity("pod-a"))
	var held []*lock.Lease
	for range 2 {
		lease, err := l.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, lease)
		held = append(held, lease)
	}
	if held[1].Fence() <= held[0].Fence() {
		t.Errorf("fences %d then %d: not increasing across permits", held[0].Fence(), held[1].Fence())
	}
	if _, err := l.TryAcquire(t.Context()); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("a third permit of 2 = %v, want ErrNotAcquired", err)
	}
	h, err := l.InspectPermits(t.Context())
	if err != nil || h.Held() != 2 || h.Holders[0].Identity != "pod-a" || h.Fence != held[1].Fence() {
		t.Fatalf("InspectPermits = %+v, %v; want 2 held by pod-a, fence %d", h, err, held[1].Fence())
	}
	if _, err := l.Inspect(t.Context()); err == nil {
		t.Error("Inspect (a lock's read) of a semaphore's key succeeded")
	}
	if err := held[0].Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	third, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("a permit after a release: %v", err)
	}
	releaseAtEnd(t, third)
}

// TestMaxHoldFromTheResourceEndsTheLease: spec.maxHold reaches the
// Locker, for a lock and for a semaphore's permit: a lease that the
// watchdog keeps renewing past its ttl ends about maxHold after it was
// taken, lost with lock.ErrMaxHoldExceeded, and its key is free then for
// the next holder.
func TestMaxHoldFromTheResourceEndsTheLease(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	cfg := podConfig(t, env, ns, credentialsSecret)
	const ttl, maxHold = 500 * time.Millisecond, 2 * time.Second
	for _, c := range []struct {
		name    string
		permits int32
	}{
		{"lock", 1},
		{"semaphore", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dl := createLock(t, env, ns, c.name, v1alpha1.DistributedLockSpec{Permits: c.permits,
				TTL: &metav1.Duration{Duration: ttl}, MaxHold: &metav1.Duration{Duration: maxHold}})
			publish(t, env, dl, ns+"/"+c.name, standalone(srv.Addr()), map[string][]byte{})
			l := newKubeLocker(t, cfg, ns, c.name, lock.WithIdentity("stuck"))

			start := time.Now()
			lease, err := l.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, lease)
			select {
			case <-lease.Done():
			case <-time.After(10 * maxHold):
				t.Fatalf("the lease is still held %v after it was taken, with spec.maxHold %v", time.Since(start), maxHold)
			}
			// At least maxHold - ttl: renewed past its first ttl, ended by
			// the cap and not by a renewal that failed.
			if held := time.Since(start); held < maxHold-ttl {
				t.Fatalf("the lease ended after %v, before spec.maxHold %v (ttl %v): %v", held, maxHold, ttl, lease.Err())
			}
			if err := lease.Err(); !errors.Is(err, lock.ErrLeaseLost) || !errors.Is(err, lock.ErrMaxHoldExceeded) {
				t.Fatalf("the lease ended with %v, want ErrLeaseLost wrapping ErrMaxHoldExceeded", err)
			}
			next := newKubeLocker(t, cfg, ns, c.name, lock.WithIdentity("next"))
			ctx, cancel := context.WithTimeout(t.Context(), 10*ttl)
			defer cancel()
			taken, err := next.Acquire(ctx)
			if err != nil {
				t.Fatalf("the next holder could not take the lock after the capped lease ended: %v", err)
			}
			releaseAtEnd(t, taken)
		})
	}
}

// TestNotReadyIsWaitedForWithinBounds: a lock that is not Ready fails
// TryAcquire at once with ErrNotReady naming the reason; Acquire waits for
// it within its context (a lock applied together with the CronJob that
// takes it must work): bounded by a deadline it fails with ErrNotReady
// after the deadline, and when the controller publishes the lock Ready
// (with its credentials Secret written a moment later, as the controller
// does) a waiting Acquire takes it.
func TestNotReadyIsWaitedForWithinBounds(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "down", v1alpha1.DistributedLockSpec{})
	notReady := v1alpha1.DistributedLockStatus{}
	apimeta.SetStatusCondition(&notReady.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonEndpointUnreachable, Message: "127.0.0.1:1: connection refused"})
	setStatus(t, env, dl, notReady)
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "down")

	start := time.Now()
	_, err := l.TryAcquire(context.Background())
	if !errors.Is(err, kube.ErrNotReady) || !strings.Contains(err.Error(), v1alpha1.ReasonEndpointUnreachable) {
		t.Fatalf("TryAcquire = %v, want ErrNotReady naming the reason", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("TryAcquire took %v to report a resource that is not Ready", d)
	}
	t.Logf("error a user sees: %v", err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	_, err = l.Acquire(ctx)
	if !errors.Is(err, kube.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with a 1s deadline = %v, want ErrNotReady and the deadline", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
		t.Fatalf("Acquire with a 1s deadline returned after %v", d)
	}

	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		lease, err := l.Acquire(ctx)
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond) // Acquire is waiting
	publish(t, env, dl, ns+"/down", standalone(srv.Addr()), nil)
	time.Sleep(300 * time.Millisecond) // Ready, the Secret not written yet
	writeSecret(t, env, ns, map[string][]byte{})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Acquire once the lock became Ready: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Acquire did not take the lock within 20s of it becoming Ready")
	}
}

// TestMissingKeyOrSecretIsNotReady: a Ready lock without status.key (a
// controller that predates it) is not Ready; a credentials Secret that
// does not exist, or that the pod may not read, is an error naming it.
func TestMissingKeyOrSecretIsNotReady(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "partial", v1alpha1.DistributedLockSpec{})
	publish(t, env, dl, "", standalone(srv.Addr()), nil)
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "partial")
	if _, err := l.TryAcquire(t.Context()); !errors.Is(err, kube.ErrNotReady) || !strings.Contains(err.Error(), "status.key") {
		t.Fatalf("without status.key: %v, want ErrNotReady naming status.key", err)
	}

	publish(t, env, dl, ns+"/partial", standalone(srv.Addr()), nil) // no Secret yet
	locktest.WaitFor(t, 20*time.Second, "the published key", func() bool { return l.Key() != "" })
	_, err := l.TryAcquire(t.Context())
	if !errors.Is(err, kube.ErrNotReady) || !strings.Contains(err.Error(), ns+"/"+credentialsSecret) {
		t.Fatalf("without the Secret: %v, want ErrNotReady naming it", err)
	}
	t.Logf("error a user sees: %v", err)

	writeSecret(t, env, ns, map[string][]byte{})
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("once the Secret exists: %v", err)
	}
	releaseAtEnd(t, lease)

	// A pod whose Role lacks get on the Secret.
	ns2 := env.Namespace(t)
	publish(t, env, createLock(t, env, ns2, "partial", v1alpha1.DistributedLockSpec{}), ns2+"/partial", standalone(srv.Addr()), map[string][]byte{})
	denied := newKubeLocker(t, podConfig(t, env, ns2), ns2, "partial")
	if _, err := denied.TryAcquire(t.Context()); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "needs get") {
		t.Fatalf("without get on the Secret: %v, want Forbidden saying what the pod needs", err)
	} else {
		t.Logf("error a user sees: %v", err)
	}
}

// When the controller publishes a new master, the next acquisition goes
// there, while a lease held on the old master stays valid until released.
func TestLockerFollowsTheMasterInStatusWithoutDroppingHeldLeases(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	oldMaster, newMaster := redistest.StartStandalone(t), redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "moving", v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: time.Second}})
	key := ns + "/moving"
	replicated := func(master string) v1alpha1.ConnectionStatus {
		return v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{master}}
	}
	publish(t, env, dl, key, replicated(oldMaster.Addr()), map[string][]byte{})
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "moving")
	held, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	publish(t, env, dl, key, replicated(newMaster.Addr()), nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		lease, err := l.TryAcquire(t.Context())
		if err == nil {
			onServer(t, newMaster, lease)
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
	onServer(t, oldMaster, held)
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
	spec := v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: time.Second}}
	dl := createLock(t, env, ns, "moved", spec)
	publish(t, env, dl, "jobs/old", standalone(srv.Addr()), map[string][]byte{})
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "moved")
	held, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, held) // released below unless the test fails first

	if err := env.Client.Delete(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	publish(t, env, createLock(t, env, ns, "moved", spec), "jobs/new", standalone(srv.Addr()), nil)
	locktest.WaitFor(t, 20*time.Second, "the moved key", func() bool { return l.Key() == "jobs/new" })

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
// to the new master without a restart. The servers need a password, which
// the failover client sends through the credentials Secret.
func TestLockerFollowsASentinelFailover(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	group := redistest.StartSentinel(t, 1, redistest.WithPassword("s3cret"))
	dl := createLock(t, env, ns, "sentinel", v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: 2 * time.Second}})
	key := ns + "/sentinel"
	publish(t, env, dl, key, v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel,
		Sentinel: &v1alpha1.SentinelConnection{MasterName: group.MasterName, Addresses: group.SentinelAddrs()}}, password("s3cret"))
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "sentinel")
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
	onServer(t, group.ServerByAddr(newMaster), after)
	if after.Fence() <= before.Fence() {
		t.Fatalf("fence after failover %d not above %d", after.Fence(), before.Fence())
	}
}

func TestLockerOverRedlockNodes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	nodes := redistest.StartNodes(t, 3)
	addrs := []string{nodes[0].Addr(), nodes[1].Addr(), nodes[2].Addr()}
	dl := createLock(t, env, ns, "quorum", v1alpha1.DistributedLockSpec{Fencing: &v1alpha1.FencingSpec{Enabled: ptr.To(true)}})
	publish(t, env, dl, "jobs/quorum", v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeRedlock, Addresses: addrs}, map[string][]byte{})
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "quorum")
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	for _, n := range nodes {
		onServer(t, n, lease)
	}
}

func TestClosedLockerRefusesWork(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "closing", v1alpha1.DistributedLockSpec{})
	publish(t, env, dl, ns+"/closing", standalone(srv.Addr()), map[string][]byte{})
	l, err := kube.NewLocker(t.Context(), podConfig(t, env, ns, credentialsSecret), ns, "closing")
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

// TLS: the handle trusts ca.crt of the credentials Secret and checks the
// server name status.connection.tls publishes.
func TestLockerOverTLS(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithTLS())
	dl := createLock(t, env, ns, "tls", v1alpha1.DistributedLockSpec{})
	publish(t, env, dl, ns+"/tls", tlsConnection(srv), map[string][]byte{v1alpha1.CredentialsCA: srv.CACertPEM()})
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "tls")
	lease, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatalf("TryAcquire over TLS: %v", err)
	}
	releaseAtEnd(t, lease)
	onServer(t, srv, lease)
}

// tlsConnection is the connection of a server started WithTLS, checked
// against the name in its certificate.
func tlsConnection(srv *redistest.Server) v1alpha1.ConnectionStatus {
	conn := standalone(srv.Addr())
	conn.TLS = &v1alpha1.ConnectionTLS{ServerName: redistest.TLSServerName}
	return conn
}

// onServer fails the test unless srv holds lease under its key.
func onServer(t *testing.T, srv *redistest.Server, lease *lock.Lease) {
	t.Helper()
	if got := srv.Client(t).Get(t.Context(), lease.Key()).Val(); got != lease.Value() {
		t.Fatalf("%s does not hold the lease on %q", srv.Addr(), lease.Key())
	}
}

// Mutual TLS: the handle presents tls.crt and tls.key of the credentials
// Secret. The server checks client certificates against its own CA
// (tls-auth-clients optional: the harness's clients have none), so a
// certificate of another CA is refused, and the Secret's next version with
// a good one is used without a new Locker.
func TestLockerOverMutualTLS(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	clientCA, strangerCA := certtest.NewCA(t, "client CA"), certtest.NewCA(t, "stranger CA")
	srv := redistest.StartStandalone(t, redistest.WithTLS(),
		redistest.WithConfig("--tls-auth-clients", "optional", "--tls-ca-cert-file", clientCA.File(t)))
	credentials := func(ca *certtest.CA) map[string][]byte {
		cert, key := ca.ClientCert(t, "pod")
		return map[string][]byte{v1alpha1.CredentialsCA: srv.CACertPEM(), v1alpha1.CredentialsClientCert: cert, v1alpha1.CredentialsClientKey: key}
	}
	dl := createLock(t, env, ns, "mtls", v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: time.Second}})
	publish(t, env, dl, ns+"/mtls", tlsConnection(srv), credentials(strangerCA))
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "mtls")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if lease, err := l.TryAcquire(ctx); err == nil {
		releaseAtEnd(t, lease)
		t.Fatal("a client certificate of another CA was accepted: is the certificate presented at all?")
	} else {
		t.Logf("refused as it should: %v", err)
	}

	writeSecret(t, env, ns, credentials(clientCA))
	var lease *lock.Lease
	locktest.WaitFor(t, 20*time.Second, "an acquire with the new Secret (read again once its copy is a TTL old)", func() bool {
		var err error
		lease, err = l.TryAcquire(ctx)
		return err == nil
	})
	releaseAtEnd(t, lease)
	onServer(t, srv, lease)
}

// TestPasswordRotationKeepsHeldLeases: the controller rotates the password
// (adds the new one on the server, updates the Secret, drops the old one
// 2 × TTL later). A lease held across it keeps renewing, on its open
// connections and on new ones made with the new password; other pods
// connect with the new password; the same Locker acquires again without
// ErrRebinding.
func TestPasswordRotationKeepsHeldLeases(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	const ttl = 2 * time.Second
	srv := redistest.StartStandalone(t, redistest.WithPassword("old"))
	admin := srv.Client(t, func(o *redis.Options) { o.Password = "new" }) // used once the new password exists
	dl := createLock(t, env, ns, "rotated", v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: ttl}})
	key := ns + "/rotated"
	publish(t, env, dl, key, standalone(srv.Addr()), password("old"))
	cfg := podConfig(t, env, ns, credentialsSecret)
	l := newKubeLocker(t, cfg, ns, "rotated", lock.WithIdentity("pod-a"))
	held, err := l.TryAcquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, held)

	ctx := t.Context()
	if err := srv.Client(t).Do(ctx, "ACL", "SETUSER", "default", ">new").Err(); err != nil {
		t.Fatal(err)
	}
	writeSecret(t, env, ns, password("new"))
	time.Sleep(2 * ttl)
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "<old").Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).Ping(ctx).Err(); err == nil {
		t.Fatal("the old password still works: the rotation did not happen")
	}

	time.Sleep(ttl + ttl/2)
	if err := held.Err(); err != nil || admin.Get(ctx, key).Val() != held.Value() {
		t.Fatalf("the held lease did not survive the rotation on its open connections: %v", err)
	}
	other := newKubeLocker(t, cfg, ns, "rotated", lock.WithIdentity("pod-b"))
	if _, err := other.TryAcquire(ctx); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("another pod after the rotation: %v, want ErrNotAcquired (connected with the new password, the lock held)", err)
	}
	if h, err := other.Inspect(ctx); err != nil || h.Identity != "pod-a" {
		t.Fatalf("another pod's Inspect: %+v, %v; want the holder pod-a", h, err)
	}

	// Every connection of pod-a closed: the renewals reconnect, with the
	// new password.
	if err := admin.Do(ctx, "CLIENT", "KILL", "USER", "default", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + ttl/2)
	if err := held.Err(); err != nil || admin.Get(ctx, key).Val() != held.Value() {
		t.Fatalf("the held lease did not survive reconnecting after the rotation: %v", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the same Locker after the rotation: %v, want a lease (no rebinding)", err)
	}
	releaseAtEnd(t, lease)
}

// Several DistributedLocks of one store are taken all or none, at once or
// waiting, and shared holds go through the resource too; across stores,
// namespaces or with a semaphore, TryAcquireAll and AcquireAll are refused
// with lock.ErrInvalidConfig.
func TestSeveralLocksAndSharedHoldsThroughTheResources(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	other := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	for name, addr := range map[string]string{"debit": srv.Addr(), "credit": srv.Addr(), "elsewhere": other.Addr()} {
		publish(t, env, createLock(t, env, ns, name, v1alpha1.DistributedLockSpec{}), ns+"/"+name, standalone(addr), password("s3cret"))
	}
	publish(t, env, createLock(t, env, ns, "pool", v1alpha1.DistributedLockSpec{Permits: 2}), ns+"/pool", standalone(srv.Addr()), password("s3cret"))
	cfg := podConfig(t, env, ns, credentialsSecret)
	debit, credit := newKubeLocker(t, cfg, ns, "debit"), newKubeLocker(t, cfg, ns, "credit")

	m, err := kube.TryAcquireAll(t.Context(), debit, credit)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Client(t).Exists(t.Context(), ns+"/debit", ns+"/credit").Val(); n != 2 || len(m.Fences()) != 2 {
		t.Fatalf("%d keys held, %d fences: want both", n, len(m.Fences()))
	}
	if _, err := debit.TryAcquire(t.Context()); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("a key of the multi-lease taken alone: %v, want ErrNotAcquired", err)
	}
	if err := m.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, with := range []string{"elsewhere", "pool"} {
		if _, err := kube.TryAcquireAll(t.Context(), debit, newKubeLocker(t, cfg, ns, with)); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Fatalf("TryAcquireAll with %s: %v, want ErrInvalidConfig", with, err)
		}
		if _, err := kube.AcquireAll(t.Context(), debit, newKubeLocker(t, cfg, ns, with)); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Fatalf("AcquireAll with %s: %v, want ErrInvalidConfig", with, err)
		}
	}

	acquireAllWaitsForAKeyAnotherPodHolds(t, debit, credit, newKubeLocker(t, cfg, ns, "credit"))

	r1, err := debit.AcquireShared(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, r1)
	r2, err := newKubeLocker(t, cfg, ns, "debit").TryAcquireShared(t.Context())
	if err != nil {
		t.Fatalf("a second reader through the resource: %v", err)
	}
	releaseAtEnd(t, r2)
	if _, err := newKubeLocker(t, cfg, ns, "pool").TryAcquireShared(t.Context()); !errors.Is(err, lock.ErrInvalidConfig) {
		t.Fatalf("a shared hold of a semaphore: %v, want ErrInvalidConfig", err)
	}
}

// acquireAllWaitsForAKeyAnotherPodHolds: kube.AcquireAll(debit, credit)
// waits while other (a second handle on credit's resource) holds credit,
// and takes both when it releases.
func acquireAllWaitsForAKeyAnotherPodHolds(t *testing.T, debit, credit, other *kube.Locker) {
	t.Helper()
	single, err := other.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	both := make(chan *lock.MultiLease, 1)
	go func() {
		m, err := kube.AcquireAll(t.Context(), debit, credit)
		if err != nil {
			t.Errorf("AcquireAll: %v", err)
		}
		both <- m
	}()
	select {
	case <-both:
		t.Fatal("AcquireAll returned while another pod held one of its keys")
	case <-time.After(300 * time.Millisecond):
	}
	if err := single.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-both:
		if m == nil {
			t.FailNow()
		}
		if err := m.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AcquireAll still waiting 5 s after the other pod released its key")
	}
}

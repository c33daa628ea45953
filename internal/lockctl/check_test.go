package lockctl_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
)

// wantCheck runs `lockctl check install` with args and checks its exit code
// and that its output says each of want.
func wantCheck(t *testing.T, code int, args []string, want ...string) result {
	t.Helper()
	r := lockctl(t, append([]string{"check", "install"}, args...)...)
	if r.code != code {
		t.Fatalf("check install %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("check install %v does not say %q:\nstdout:\n%s\nstderr:\n%s", args, w, r.stdout, r.stderr)
		}
	}
	return r
}

// TestCheckInstallLease: the manager counts as running only when its
// leader election Lease is renewed while the check watches. A Lease that
// is missing, released, or held with a fresh-looking renewTime that nobody
// renews any more (a leader that crashed a moment ago) fails, each with its
// reason; the ClusterLockStore named must be Ready for its current
// generation. Each failing run is bounded by a short --timeout.
func TestCheckInstallLease(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	store := ns + "-shared"
	args := []string{"--kubeconfig", kubeconfig, "--leader-election-lease", ns + "/manager.redlease.io", "--cluster-lock-store", store, "--timeout", "1500ms"}

	// Nothing installed but the CRDs.
	wantCheck(t, 1, args,
		"ok    crds     redlease.io/v1alpha1 serves ClusterLockStore, DistributedLock, LockRelease, LockStore",
		"FAIL  manager  Lease "+ns+"/manager.redlease.io not found: no manager has become leader",
		"FAIL  store    ClusterLockStore "+store+" not found",
		"install check failed: 2 of 3 checks did not pass")

	// A Lease that looks freshly renewed but is not renewed any more; a
	// store that is not Ready.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manager.redlease.io"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-7f9c_1"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	if err := env.Client.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	cs := &v1alpha1.ClusterLockStore{ObjectMeta: metav1.ObjectMeta{Name: store},
		Spec: v1alpha1.ClusterLockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"redis:6379"}}}}
	if err := env.Client.Create(t.Context(), cs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cs) }) // cluster-scoped: outlives the namespace
	setStoreReady(t, env, cs, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable, "redis:6379: connection refused")
	wantCheck(t, 1, args,
		"FAIL  manager  Lease "+ns+"/manager.redlease.io held by manager-7f9c_1 was not renewed in the",
		"lease duration 15s): the manager holding it is not running",
		"FAIL  store    ClusterLockStore "+store+" is not Ready: EndpointUnreachable: redis:6379: connection refused")

	// Released by a leader that stopped; a Ready condition written for
	// the store's previous spec.
	lease.Spec.HolderIdentity = ptr.To("")
	if err := env.Client.Update(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	setStoreReady(t, env, cs, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "")
	cs.Spec.Safety = &v1alpha1.SafetySpec{WaitForReplicas: 0, MinReplicasMaxLag: &metav1.Duration{Duration: 20 * time.Second}}
	if err := env.Client.Update(t.Context(), cs); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, 1, args,
		"FAIL  manager  Lease "+ns+"/manager.redlease.io has no holder: the last leader released it",
		"FAIL  store    ClusterLockStore "+store+": its Ready condition (True) is for generation 1, its spec is at generation 2")

	// A leader renewing every 200ms, and the store Ready for its spec.
	setStoreReady(t, env, cs, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "")
	renewing(t, env.Client, lease, 200*time.Millisecond)
	wantCheck(t, 0, append(args[:len(args)-1], "30s"),
		"ok    manager  Lease "+ns+"/manager.redlease.io renewed by manager-7f9c_2 while watched",
		"ok    store    ClusterLockStore "+store+" is Ready",
		"install check passed")
}

// setStoreReady writes the store's Ready condition (and observedGeneration)
// for its current generation, as the controller would.
func setStoreReady(t *testing.T, env *kubetest.Env, cs *v1alpha1.ClusterLockStore, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	cs.Status.ObservedGeneration = cs.Generation
	apimeta.SetStatusCondition(&cs.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: cs.Generation})
	if err := env.Client.Status().Update(t.Context(), cs); err != nil {
		t.Fatal(err)
	}
}

// renewing takes the Lease as manager-7f9c_2 and renews it every period
// until t ends, as a leader does.
func renewing(t *testing.T, c client.Client, lease *coordinationv1.Lease, period time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			var l coordinationv1.Lease
			if err := c.Get(ctx, client.ObjectKeyFromObject(lease), &l); err == nil {
				l.Spec.HolderIdentity = ptr.To("manager-7f9c_2")
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				_ = c.Update(ctx, &l) // a conflict is retried on the next period
			}
			select {
			case <-ctx.Done():
			case <-time.After(period):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestCheckInstallDeployment: without leader election the manager's
// Deployment must have observed its spec and have an available replica.
func TestCheckInstallDeployment(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	labels := map[string]string{"app": "manager"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redlease-controller-manager"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "redlease/manager:v0.1.0"}}}}}}
	if err := env.Client.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", kubeconfig, "--manager-deployment", ns + "/" + d.Name, "--timeout", "1s"}
	wantCheck(t, 1, args, "FAIL  manager  Deployment "+ns+"/"+d.Name+": generation 1 not yet observed")

	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2}
	if err := env.Client.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, 1, args, "FAIL  manager  Deployment "+ns+"/"+d.Name+" has 0 of 2 replicas available")

	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
	if err := env.Client.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, 0, args, "ok    manager  Deployment "+ns+"/"+d.Name+" has 1 of 2 replicas available", "install check passed")
}

// TestCheckInstallUsage: the manager must be named one way, stores by name.
func TestCheckInstallUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--leader-election-lease", "ns/l", "--manager-deployment", "ns/d"},
		{"--leader-election-lease", "lease-without-namespace"},
		{"--manager-deployment", "ns/d", "--cluster-lock-store", "ns/shared"},
		{"--manager-deployment", "ns/d", "--timeout", "0s"},
	} {
		if r := lockctl(t, append([]string{"check", "install"}, args...)...); r.code != 2 {
			t.Errorf("check install %v: exit %d, want 2 (usage); stderr %q", args, r.code, r.stderr)
		}
	}
	if r := lockctl(t, "check"); r.code != 2 || !strings.Contains(r.stderr, "install") {
		t.Errorf("check without a subcommand: exit %d, stderr %q; want 2 naming install", r.code, r.stderr)
	}
}

package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redisprobe"
	"github.com/redlease/redlease/internal/redistest"
)

// A lock deleted and re-created under the same name between two reconciles
// reaches the controller as one reconcile of a new UID. Before, the state
// swapped UIDs silently: the old incarnation's pooled clients stayed open
// and no Deleted Event said that Redis was left alone. Reconcile is called
// directly here, so the deletion is never seen on its own.
func TestRecreatedLockRetiresTheOldIncarnation(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	pool := redisprobe.NewPool(redisprobe.PoolOptions{})
	t.Cleanup(func() { _ = pool.Close() })
	rec := events.NewFakeRecorder(100)
	r := NewDistributedLockReconciler(env.Client, env.Client, rec, Options{Pool: pool, ProbeInterval: time.Minute})
	first, second := redistest.StartStandalone(t), redistest.StartStandalone(t)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "reborn"}}
	ctx := t.Context()

	create := func(addr string) {
		t.Helper()
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn"}, Spec: standaloneSpec(addr)}
		if err := env.Client.Create(ctx, dl); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	create(first.Addr())
	if n := pool.Len(); n != 1 {
		t.Fatalf("pool holds %d clients after the first incarnation, want 1", n)
	}
	if err := env.Client.Delete(ctx, &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn"}}); err != nil {
		t.Fatal(err)
	}
	create(second.Addr()) // same name, new UID, no reconcile in between
	if n := pool.Len(); n != 1 {
		t.Errorf("pool holds %d clients after the re-creation, want 1: the old incarnation's client leaked", n)
	}
	deleted := false
	for len(rec.Events) > 0 {
		if ev := <-rec.Events; strings.Contains(ev, v1alpha1.ReasonDeleted) {
			deleted = true
		}
	}
	if !deleted {
		t.Error("no Deleted Event for the replaced incarnation")
	}
}

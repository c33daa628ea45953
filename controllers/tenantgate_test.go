package controllers

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// silentServer accepts TCP connections on loopback and never answers, like
// a Redis behind a firewall that drops replies: every probe of it waits
// for its timeouts.
func silentServer(t *testing.T) string {
	t.Helper()
	return redistest.ServeFake(t, nil, nil)
}

// One namespace has 12 inline locks on a server that never answers (each
// reconcile waits about 2 s for it); another namespace's lock on a healthy
// Redis, created once the first are cycling, must still become Ready
// promptly. The slow namespace may use only half the workers, so the other
// half reaches the healthy lock (expected: about one reconcile, well under
// a second; 0.13 s measured; bound 6 s). Without the gate the healthy
// lock queued behind the slow ones: 19 s measured with 20 of them.
func TestASlowTenantDoesNotStarveTheOthers(t *testing.T) {
	h := newHarness(t, harnessOptions{namespaces: 1, concurrency: 2})
	noisy := h.extra[0]
	silent := silentServer(t)
	for i := range 12 {
		h.createIn(noisy, "silent-"+strconv.Itoa(i), standaloneSpec(silent))
	}
	time.Sleep(3 * time.Second) // the noisy namespace's reconciles are slow by now, and cycling
	srv := redistest.StartStandalone(t)
	created := time.Now()
	h.create("healthy", standaloneSpec(srv.Addr()))
	h.waitFor("healthy", "Ready", isReady)
	took := time.Since(created)
	t.Logf("the healthy lock was Ready %v after it was created", took)
	if took > 6*time.Second {
		t.Fatalf("the healthy lock waited %v behind the slow namespace's locks", took)
	}
}

// TestASlowTenantsStoresDoNotStarveTheOthers is the same with LockStores:
// 12 in one namespace on a server that never answers; another namespace's
// LockStore on a healthy Redis must still become Ready promptly (bound
// 6 s). Without a gate on store reconciles it waited behind the slow ones
// (each about 2 s, two workers).
func TestASlowTenantsStoresDoNotStarveTheOthers(t *testing.T) {
	h := newHarness(t, harnessOptions{namespaces: 1, concurrency: 2})
	noisy := h.extra[0]
	silent := silentServer(t)
	store := func(ns, name, addr string) *v1alpha1.LockStore {
		ls := &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}}}
		if err := h.c.Create(h.ctx(), ls); err != nil {
			t.Fatal(err)
		}
		return ls
	}
	for i := range 12 {
		store(noisy, "silent-"+strconv.Itoa(i), silent)
	}
	time.Sleep(3 * time.Second) // the noisy namespace's reconciles are slow by now, and cycling
	srv := redistest.StartStandalone(t)
	created := time.Now()
	healthy := store(h.ns, "healthy", srv.Addr())
	h.waitStore(healthy, "Ready", storeReady)
	took := time.Since(created)
	t.Logf("the healthy LockStore was Ready %v after it was created", took)
	if took > 6*time.Second {
		t.Fatalf("the healthy LockStore waited %v behind the slow namespace's stores", took)
	}
}

// The gate on its own: a slow namespace gets half the workers, a quick one
// all of them, and a namespace that turned quick again is let go.
func TestTenantGate(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	g := newTenantGate(clk, 4)
	run := func(ns string, took time.Duration) {
		done, ok := g.enter(ns)
		if !ok {
			t.Fatalf("%s deferred while idle", ns)
		}
		clk.SetTime(clk.Now().Add(took))
		done()
	}
	for range 10 {
		run("slow", 3*time.Second)
		run("quick", 10*time.Millisecond)
	}
	admitted := func(ns string) int {
		n := 0
		for range 4 {
			if _, ok := g.enter(ns); ok {
				n++
			}
		}
		return n
	}
	if n := admitted("slow"); n != 2 {
		t.Errorf("slow namespace: %d of 4 admitted at once, want 2", n)
	}
	if n := admitted("quick"); n != 4 {
		t.Errorf("quick namespace: %d of 4 admitted at once, want 4", n)
	}
}

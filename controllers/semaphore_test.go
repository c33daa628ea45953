package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// permitsAre checks status.permits, status.held and the identities and
// fences in status.holders (in order), and that a semaphore shows no
// single holder.
func permitsAre(permits, held int32, holders []string, fences []uint64) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		st := dl.Status
		var got []string
		var gotFences []uint64
		for _, h := range st.Holders {
			if h.Since.IsZero() {
				return fmt.Errorf("holder %s has no since", h.Identity)
			}
			got, gotFences = append(got, h.Identity), append(gotFences, uint64(h.Fence)) //nolint:gosec // G115: a fence is below 2^53
		}
		switch {
		case st.Permits != permits || st.Held != held:
			return fmt.Errorf("permits %d, held %d; want %d, %d", st.Permits, st.Held, permits, held)
		case !slices.Equal(got, holders) || !slices.Equal(gotFences, fences):
			return fmt.Errorf("holders %q with fences %v, want %q with %v", got, gotFences, holders, fences)
		case permits > 1 && st.Holder != nil:
			return fmt.Errorf("a semaphore with status.holder %+v", st.Holder)
		}
		return nil
	}
}

// TestSemaphoreStatus: a DistributedLock with spec.permits 3 shows its
// permits, how many are held, and the holders (identity, fence, since,
// longest-held first), never a value; a release shows at once. Lowering
// permits below the holders revokes nothing: status shows more held than
// permitted. A plain lock shows permits 1 and held 0 or 1.
func TestSemaphoreStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	spec := standaloneSpec(srv.Addr())
	spec.Permits = 3
	h.create("pool", spec)
	h.waitFor("pool", "Ready", isReady)
	h.waitFor("pool", "three permits, none held", permitsAre(3, 0, nil, nil))

	key := protocol.DefaultKey(h.ns, "pool")
	a := newLocker(t, srv.Client(t), lock.WithIdentity("worker-a"), lock.WithTTL(10*time.Second)).Semaphore(key, 3)
	b := newLocker(t, srv.Client(t), lock.WithIdentity("worker-b"), lock.WithTTL(10*time.Second)).Semaphore(key, 3)
	first, err := a.TryAcquire(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, first)
	time.Sleep(5 * time.Millisecond) // since is in milliseconds: keep the order visible
	second, err := b.TryAcquire(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, second)
	dl := h.waitFor("pool", "two holders", permitsAre(3, 2, []string{"worker-a", "worker-b"}, []uint64{first.Fence(), second.Fence()}))
	if dl.Status.FenceHighWater != clampInt64(second.Fence()) {
		t.Errorf("fenceHighWater %d, want the last fence %d", dl.Status.FenceHighWater, second.Fence())
	}
	raw, err := json.Marshal(dl)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*lock.Lease{first, second} {
		if v := l.Value(); strings.Contains(string(raw), v[strings.LastIndexByte(v, '/')+1:]) {
			t.Errorf("a permit's value appears in the DistributedLock: %s", raw)
		}
	}

	if err := first.Release(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pool", "one holder after a release", permitsAre(3, 1, []string{"worker-b"}, []uint64{second.Fence()}))

	// Lowered to 1 while a permit is held: nothing is revoked, and the key
	// is still read as the semaphore it is.
	patch := client.MergeFrom(dl.DeepCopy())
	dl.Spec.Permits = 1
	if err := h.c.Patch(h.ctx(), dl, patch); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pool", "permits lowered, the holder kept", permitsAre(1, 1, []string{"worker-b"}, []uint64{second.Fence()}))
	if err := second.Renew(h.ctx()); err != nil {
		t.Fatalf("the holder's renewal after permits were lowered: %v", err)
	}
	if err := second.Release(h.ctx()); err != nil {
		t.Fatal(err)
	}
	// Free, the key is a lock's again.
	l := newLocker(t, srv.Client(t), lock.WithIdentity("locker"), lock.WithTTL(10*time.Second))
	lease, err := l.TryAcquire(h.ctx(), key)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	h.waitFor("pool", "the lock's holder", func(dl *v1alpha1.DistributedLock) error {
		if err := holderIs("locker", lease.Fence())(dl); err != nil {
			return err
		}
		return permitsAre(1, 1, nil, nil)(dl)
	})
}

// TestSemaphoreOnAStore: a semaphore on a LockStore is observed through the
// store's batched read: a permit taken reaches the lock's status within
// about a probe interval (the read enqueues the lock; its resync alone
// would take ten).
func TestSemaphoreOnAStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.createStore(t, "sem-store", srv.Addr())
	spec := onStore(v1alpha1.StoreKindLockStore, "sem-store", "")
	spec.Permits = 2
	h.create("pool", spec)
	dl := h.waitFor("pool", "Ready", isReady)
	h.waitFor("pool", "two permits, none held", permitsAre(2, 0, nil, nil))
	time.Sleep(2 * time.Second) // past the ramp: the next reconcile is the resync's or the batch's

	sem := newLocker(t, h.podClient(dl), lock.WithIdentity("store-pod"), lock.WithTTL(30*time.Second)).Semaphore(dl.Status.Key, 2)
	taken := time.Now()
	lease, err := sem.TryAcquire(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	h.waitFor("pool", "the permit observed", permitsAre(2, 1, []string{"store-pod"}, []uint64{lease.Fence()}))
	// Expected: one probe interval (1 s) and a reconcile; bound 5 s, half
	// the lock's 10 s resync.
	if d := time.Since(taken); d > 5*time.Second {
		t.Errorf("the permit reached the lock's status %v after it was taken: the store's read did not enqueue the lock", d)
	}
}

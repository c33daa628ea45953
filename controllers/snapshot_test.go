/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestLocksOnAStoreReadInBatches: 120 locks on one LockStore cost the
// server one batched read per store reconcile, and idle locks cost no
// reconciles at all: over five probe intervals the server sees a handful
// of read events (INFO stats total_reads_processed: one per request a
// client sends, a pipeline counting once), and the locks only their resync
// (one per ten probe intervals: 68 reconciles measured; before, each lock
// reconciled once per interval, 565 in the window, with a round trip of
// its own before batching). A key that changes
// still reaches its lock's status within about a probe interval: the
// store's read enqueues that lock (its resync alone would take ten).
func TestLocksOnAStoreReadInBatches(t *testing.T) {
	t.Parallel()
	const locks = 120
	h := newHarness(t, harnessOptions{concurrency: 4})
	srv := redistest.StartStandalone(t)
	h.createStore(t, "batched", srv.Addr())
	names := make([]string, locks)
	for i := range names {
		names[i] = fmt.Sprintf("lock-%03d", i)
		h.create(names[i], onStore(v1alpha1.StoreKindLockStore, "batched", ""))
	}
	for _, n := range names {
		h.waitFor(n, "Ready", isReady)
	}

	rc := srv.Client(t)
	reconciles := func() int64 {
		var n int64
		for _, name := range names {
			n += h.counter(name).Load()
		}
		return n
	}
	time.Sleep(2 * time.Second) // the ramp's last reconciles
	readsBefore, reconcilesBefore := serverReads(t, rc), reconciles()
	time.Sleep(5 * time.Second) // five probe intervals
	reads, lockReconciles := serverReads(t, rc)-readsBefore, reconciles()-reconcilesBefore
	t.Logf("idle, over 5 probe intervals: %d lock reconciles, %d read events on the server", lockReconciles, reads)
	if lockReconciles >= locks {
		t.Errorf("%d lock reconciles of %d idle locks in 5 probe intervals: idle locks on a store are still reconciled every interval", lockReconciles, locks)
	}
	if reads > 60 {
		t.Errorf("%d read events in 5 probe intervals for %d locks: the locks on a store still read their keys one round trip each", reads, locks)
	}

	// A pod takes one of the locks: the batched read reports its holder.
	dl, err := h.get(names[0])
	if err != nil {
		t.Fatal(err)
	}
	locker := newLocker(t, h.podClient(dl), lock.WithIdentity("batch-pod"), lock.WithTTL(30*time.Second))
	taken := time.Now()
	lease, err := locker.TryAcquire(h.ctx(), dl.Status.Key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	h.waitFor(names[0], "the holder observed through the batch", holderIs("batch-pod", lease.Fence()))
	// Expected: one probe interval (1 s) and a reconcile; bound 5 s, half
	// the lock's 10 s resync.
	if d := time.Since(taken); d > 5*time.Second {
		t.Errorf("the holder reached the lock's status %v after the acquisition: the store's read did not enqueue the lock", d)
	}
}

// serverReads is the server's total_reads_processed (INFO stats): the
// read events on client connections, one per request or pipeline a client
// sends (more for a pipeline larger than the server's 16 KiB read buffer).
func serverReads(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_reads_processed")
	return 0
}

// Holder changes on a lock on a store that follow its last status write
// closely: the store's next batched read enqueues the lock less than a
// probe interval after that write, so the change waits for the status
// cadence (at most one such write per interval). It must then come back
// when the write is due, not at a store lock's resync ten probe intervals
// later: 108 s of the quick start's 3-minute wait for the holder in one CI
// run of make test-node. Two changes: a pod takes the lock right after it
// became Ready, and a second pod takes it over the moment the first
// holder shows (that write followed a read of the store's, so the next
// read, one interval after it, comes less than an interval after the
// write).
func TestADeferredHolderChangeIsWrittenWithinAnInterval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.createStore(t, "cadence", srv.Addr())
	h.create("fresh", onStore(v1alpha1.StoreKindLockStore, "cadence", ""))
	dl := h.waitFor("fresh", "Ready", isReady)
	var previous *lock.Lease
	for _, pod := range []string{"first-pod", "second-pod"} {
		locker := newLocker(t, h.podClient(dl), lock.WithIdentity(pod), lock.WithTTL(30*time.Second))
		if previous != nil {
			if err := previous.Release(h.ctx()); err != nil {
				t.Fatal(err)
			}
		}
		taken := time.Now()
		lease, err := locker.TryAcquire(h.ctx(), dl.Status.Key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lease.Release(context.Background()) })
		h.waitFor("fresh", pod+" observed", holderIs(pod, lease.Fence()))
		// Expected: one probe interval (1 s) and a reconcile; bound 5 s,
		// half the lock's 10 s resync.
		d := time.Since(taken)
		t.Logf("%s reached the lock's status %v after its acquisition", pod, d)
		if d > 5*time.Second {
			t.Errorf("%s reached the lock's status %v after its acquisition: the deferred write waited for the resync", pod, d)
		}
		previous = lease
	}
}

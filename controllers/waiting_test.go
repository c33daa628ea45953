/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestWaitingLineInStatus: pods waiting for a lock show in its status
// (status.waiting: how many, since when the longest waits) and in
// redlease_lock_waiters, for an inline lock (read on its own), a
// semaphore, and a lock on a store (read in the store's batch); when they
// give up the count goes back to 0, and the series goes with the lock.
// Every pod is a Locker of its own, on a client of its own.
func TestWaitingLineInStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		permits int
		store   bool
	}{
		{"inline-lock", 1, false},
		{"inline-semaphore", 2, false},
		{"lock-on-a-store", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{})
			srv := redistest.StartStandalone(t)
			spec := standaloneSpec(srv.Addr())
			if tt.store {
				h.createStore(t, "waiting-store", srv.Addr())
				spec = onStore(v1alpha1.StoreKindLockStore, "waiting-store", "")
			}
			spec.Permits = int32(tt.permits) //nolint:gosec // G115: 1 or 2
			dl := h.create(tt.name, spec)
			dl = h.waitFor(dl.Name, "Ready with an empty line", func(dl *v1alpha1.DistributedLock) error {
				return errors.Join(isReady(dl), waitingIs(0)(dl))
			})
			client := func() redis.UniversalClient {
				if tt.store {
					return h.podClient(dl)
				}
				return srv.Client(t)
			}

			// The holders take every permit, then three pods queue.
			for i := range tt.permits {
				take(t, client(), dl.Status.Key, tt.permits, fmt.Sprintf("holder-%d", i))
			}
			ctx, giveUp := context.WithCancel(context.Background())
			defer giveUp()
			start := time.Now()
			waiters := queue(ctx, t, client, dl.Status.Key, tt.permits, 3)
			h.waitFor(dl.Name, "three waiting since the first arrived", waitingIs(3, start))
			h.eventually("the gauge at 3", gaugeIs(h.ns, dl.Name, 3))
			t.Logf("three waiting in status and the gauge %v after the first arrived", time.Since(start))

			giveUp()
			gaveUp := time.Now()
			for range 3 {
				if err := <-waiters; !errors.Is(err, context.Canceled) {
					t.Errorf("a waiter's wait ended with %v, want it cancelled", err)
				}
			}
			h.waitFor(dl.Name, "nobody waiting once they gave up", waitingIs(0))
			h.eventually("the gauge at 0", gaugeIs(h.ns, dl.Name, 0))
			t.Logf("none waiting %v after they gave up", time.Since(gaveUp))

			if err := h.c.Delete(h.ctx(), dl); err != nil {
				t.Fatal(err)
			}
			h.eventually("the series deleted with the lock", func() error {
				if hasSeries(t, lockWaiters, h.ns, dl.Name) {
					return errors.New("redlease_lock_waiters of the deleted lock is still exported")
				}
				return nil
			})
		})
	}
}

// take makes identity hold key (a lock, or one of a semaphore's permits)
// for the rest of the test, with a Locker of its own on c.
func take(t *testing.T, c redis.UniversalClient, key string, permits int, identity string) {
	t.Helper()
	l := newLocker(t, c, lock.WithIdentity(identity), lock.WithTTL(30*time.Second))
	var lease *lock.Lease
	var err error
	if permits > 1 {
		lease, err = l.Semaphore(key, permits).TryAcquire(context.Background())
	} else {
		lease, err = l.TryAcquire(context.Background(), key)
	}
	if err != nil {
		t.Fatalf("%s: %v", identity, err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
}

// queue starts n pods waiting for key, each a Locker of its own on a
// client of its own (client), 50 ms apart so that they arrive in order;
// each sends on the channel returned when its wait ended (ctx cancelled).
func queue(ctx context.Context, t *testing.T, client func() redis.UniversalClient, key string, permits, n int) chan error {
	t.Helper()
	done := make(chan error, n)
	for i := range n {
		waited := locktest.Contend(ctx, t, client(), key, permits, fmt.Sprintf("waiter-%d", i))
		go func() {
			err := <-waited
			if err == nil {
				err = errors.New("a waiter took the lock")
			}
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
	}
	return done
}

// waitingIs checks status.waiting: count waiters, and with after, the
// oldest wait started after it (to the second status keeps) and not in
// the future; none without waiters.
func waitingIs(count int32, after ...time.Time) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		w := dl.Status.Waiting
		switch {
		case w == nil:
			return errors.New("no status.waiting")
		case w.Count != count:
			return fmt.Errorf("status.waiting.count %d, want %d", w.Count, count)
		case count == 0 && w.OldestSince != nil:
			return fmt.Errorf("status.waiting.oldestSince %v with nobody waiting", w.OldestSince)
		case count > 0 && w.OldestSince == nil:
			return errors.New("no status.waiting.oldestSince with pods waiting")
		case len(after) > 0 && (w.OldestSince.Before(&metav1.Time{Time: after[0].Truncate(time.Second)}) || w.OldestSince.After(time.Now())):
			return fmt.Errorf("status.waiting.oldestSince %v, want between %v and now", w.OldestSince, after[0])
		}
		return nil
	}
}

// gaugeIs checks redlease_lock_waiters of ns/name.
func gaugeIs(ns, name string, want float64) func() error {
	return func() error {
		if got := testutil.ToFloat64(lockWaiters.WithLabelValues(ns, name)); got != want {
			return fmt.Errorf("redlease_lock_waiters %v, want %v", got, want)
		}
		return nil
	}
}

package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestInspectReportsTheWaitingLine: Inspect of a key that pods wait for
// (each a Locker of its own, on a client of its own) counts them and
// names them in arrival order with how long each waited, for a lock and a
// semaphore; Redlock has no line, and reports none.
func TestInspectReportsTheWaitingLine(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxTimeout(t, 20*time.Second)
	for _, permits := range []int{1, 2} {
		t.Run(fmt.Sprintf("permits %d", permits), func(t *testing.T) {
			key := fmt.Sprintf("inspected-line-%d", permits)
			for i := range permits {
				l := newLocker(t, srv.Client(t), lock.WithIdentity(fmt.Sprintf("holder-%d", i)), lock.WithTTL(10*time.Second))
				lease, err := take(ctx, l, key, permits, false)
				if err != nil {
					t.Fatal(err)
				}
				releaseAtEnd(t, lease)
			}
			waitCtx, giveUp := context.WithCancel(ctx)
			defer giveUp()
			ids := []string{"waiter-0", "waiter-1", "waiter-2"}
			for _, id := range ids {
				l := newLocker(t, srv.Client(t), lock.WithIdentity(id), lock.WithTTL(10*time.Second))
				go func() {
					if lease, err := take(waitCtx, l, key, permits, true); err == nil {
						_ = lease.Release(context.WithoutCancel(waitCtx))
					}
				}()
				time.Sleep(100 * time.Millisecond) // arrivals in this order
			}
			inspector := newLocker(t, srv.Client(t))
			var w *lock.Waiting
			var err error
			// The last waiter's first attempt may still be on its way.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if w, err = inspectWaiting(ctx, inspector, key, permits); err != nil || w != nil && w.Count == len(ids) {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			checkWaiting(t, w, ids)
		})
	}

	nodes := redistest.StartNodes(t, 3)
	clients := []redis.UniversalClient{nodes[0].Client(t), nodes[1].Client(t), nodes[2].Client(t)}
	h, err := newRedlock(t, clients).Inspect(ctx, "redlock-line")
	if err != nil || h.Waiting != nil {
		t.Errorf("Redlock Inspect = %+v, %v; want no waiting line", h, err)
	}
}

// take acquires key (a permit of a semaphore of permits above 1), waiting
// for it or not.
func take(ctx context.Context, l *lock.Locker, key string, permits int, wait bool) (*lock.Lease, error) {
	switch {
	case permits > 1 && wait:
		return l.Semaphore(key, permits).Acquire(ctx)
	case permits > 1:
		return l.Semaphore(key, permits).TryAcquire(ctx)
	case wait:
		return l.Acquire(ctx, key)
	}
	return l.TryAcquire(ctx, key)
}

// inspectWaiting is the waiting line Inspect reports of key.
func inspectWaiting(ctx context.Context, l *lock.Locker, key string, permits int) (*lock.Waiting, error) {
	if permits > 1 {
		h, err := l.Semaphore(key, permits).Inspect(ctx)
		return h.Waiting, err
	}
	h, err := l.Inspect(ctx, key)
	return h.Waiting, err
}

// checkWaiting: w counts and lists ids in arrival order, each having
// waited less than the one before it.
func checkWaiting(t *testing.T, w *lock.Waiting, ids []string) {
	t.Helper()
	if w == nil {
		t.Fatal("no waiting line reported")
	}
	var got []string
	var errs []error
	for i, x := range w.Waiters {
		got = append(got, x.Identity)
		if x.Since.IsZero() || x.Waited <= 0 || x.Waited > 10*time.Second || i > 0 && x.Waited >= w.Waiters[i-1].Waited {
			errs = append(errs, fmt.Errorf("waiter %s since %v waited %v", x.Identity, x.Since, x.Waited))
		}
	}
	if w.Count != len(ids) || !slices.Equal(got, ids) {
		errs = append(errs, fmt.Errorf("count %d, waiters %q; want %q", w.Count, got, ids))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

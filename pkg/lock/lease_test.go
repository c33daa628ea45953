package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// The watchdog keeps a lease while its holder works, for many TTLs.
func TestWatchdogKeepsTheLeaseForManyTTLs(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	const ttl = 200 * time.Millisecond
	l := newLocker(t, client, lock.WithTTL(ttl))
	lease, err := l.TryAcquire(ctx, "long-task")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(5*ttl + ttl/2)
	for time.Now().Before(end) {
		if err := lease.Err(); err != nil {
			t.Fatalf("lease ended while the holder worked: %v", err)
		}
		if got := client.Get(ctx, "long-task").Val(); got != lease.Value() {
			t.Fatalf("key holds %q, want the lease's value", got)
		}
		time.Sleep(ttl / 10)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release after 5×TTL: %v", err)
	}
}

// The local deadline is the heart of safety: when Redis stops answering, the
// holder stops believing it holds the lock before the key can expire, and a
// write it makes after resuming is refused by a fenced store.
func TestLocalDeadlineEndsTheLeaseWhileRedisIsPaused(t *testing.T) {
	srv, client := startRedis(t)
	store := fence.NewRedisStore(redistest.StartStandalone(t).Client(t), "")
	ctx := ctxTimeout(t, 30*time.Second)
	const ttl = time.Second
	// A 10% drift allowance leaves the check 100ms of slack against timer noise.
	holder := newLocker(t, client, lock.WithTTL(ttl), lock.WithDriftFactor(0.1))
	lease, err := holder.TryAcquire(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(ctx, "ledger", lease.Fence(), "from the first holder"); err != nil {
		t.Fatal(err)
	}

	// The key cannot expire before now + its PTTL (a lower bound).
	pttl := client.PTTL(ctx, "paused").Val()
	keyExpiresNoEarlierThan := time.Now().Add(pttl)
	srv.Pause()
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()

	select {
	case <-lease.Done():
	case <-time.After(3 * ttl):
		t.Fatal("lease still held 3×TTL after Redis stopped answering")
	}
	endedAt := time.Now()
	if !endedAt.Before(keyExpiresNoEarlierThan) {
		t.Fatalf("lease ended %v after the key could have expired", endedAt.Sub(keyExpiresNoEarlierThan))
	}
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", lease.Err())
	}
	if !errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost) {
		t.Fatalf("context cause = %v", context.Cause(lease.Context()))
	}

	srv.Resume()
	paused = false
	next := newLocker(t, srv.Client(t))
	successor, err := next.Acquire(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, successor)
	if successor.Fence() <= lease.Fence() {
		t.Fatalf("successor fence %d not above %d", successor.Fence(), lease.Fence())
	}
	if err := store.Write(ctx, "ledger", successor.Fence(), "from the successor"); err != nil {
		t.Fatal(err)
	}
	// The old holder, resuming with a write it prepared, is refused.
	if err := store.Write(ctx, "ledger", lease.Fence(), "late write"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("late write = %v, want fence.ErrStale", err)
	}
	if _, v, _ := store.Read(ctx, "ledger"); v != "from the successor" {
		t.Fatalf("ledger = %q", v)
	}
}

// WithMaxHold stops the watchdog so a stuck task cannot keep the lock.
func TestMaxHoldEndsALeaseThatTheWatchdogWouldKeep(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	const ttl, maxHold = 150 * time.Millisecond, 400 * time.Millisecond
	l := newLocker(t, client, lock.WithTTL(ttl), lock.WithMaxHold(maxHold))
	start := time.Now()
	lease, err := l.TryAcquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lease.Done(), 5*maxHold, "the end of a lease past its max hold")
	held := time.Since(start)
	if held < maxHold-ttl || held > maxHold+ttl {
		t.Fatalf("lease held %v, want about %v", held, maxHold)
	}
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) || !errors.Is(lease.Err(), lock.ErrMaxHoldExceeded) {
		t.Fatalf("Err = %v, want ErrLeaseLost wrapping ErrMaxHoldExceeded", lease.Err())
	}
	// The key is gone no later than its last (capped) TTL, so others get in.
	other := newLocker(t, client)
	if lease2, err := other.Acquire(ctxTimeout(t, 2*time.Second), "stuck"); err != nil {
		t.Fatalf("another holder could not take the lock after max hold: %v", err)
	} else if err := lease2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTryAcquireReportsTheHoldersRemainingTTL(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client, lock.WithTTL(5*time.Second))
	lease, err := l.TryAcquire(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	_, err = l.TryAcquire(ctx, "busy")
	var held *lock.NotAcquiredError
	if !errors.Is(err, lock.ErrNotAcquired) || !errors.As(err, &held) {
		t.Fatalf("TryAcquire on a held key = %v, want a *NotAcquiredError", err)
	}
	if held.HolderTTL <= 0 || held.HolderTTL > 5*time.Second {
		t.Fatalf("HolderTTL = %v, want in (0, 5s]", held.HolderTTL)
	}
}

// The lease's context is independent of the context that acquired it.
func TestAcquireContextBoundsTheWaitNotTheLease(t *testing.T) {
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(5*time.Second))
	acquireCtx, cancel := context.WithCancel(context.Background())
	lease, err := l.Acquire(acquireCtx, "scoped")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-lease.Done():
		t.Fatal("cancelling the acquire context ended the lease")
	case <-time.After(50 * time.Millisecond):
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(lease.Err(), lock.ErrReleased) || !errors.Is(context.Cause(lease.Context()), lock.ErrReleased) {
		t.Fatalf("after Release: Err = %v, cause = %v", lease.Err(), context.Cause(lease.Context()))
	}
}

// Abandon ends the lease here and leaves the key to its TTL; Close then
// does not release it.
func TestAbandonLeavesTheKeyToItsTTL(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := lock.New(client, lock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctx, "abandoned")
	if err != nil {
		t.Fatal(err)
	}
	lease.Abandon()
	waitClosed(t, lease.Done(), time.Second, "Done after Abandon")
	if !errors.Is(lease.Err(), lock.ErrReleased) {
		t.Fatalf("Err = %v, want ErrReleased", lease.Err())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if pttl := client.PTTL(ctx, "abandoned").Val(); pttl <= 0 {
		t.Fatalf("the abandoned key is gone (PTTL %v): Close released it", pttl)
	}
}

// Done and Context tell the same end whether they are first asked for
// while the lease is held or only after it ended (the Locker makes the
// context when it is first asked for): Done is closed and the context's
// cause is Err, for a release, an abandon and a lease lost at its deadline.
func TestDoneAndContextTellTheEndWheneverTheyAreAskedFor(t *testing.T) {
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(500*time.Millisecond), lock.WithoutWatchdog())
	ctx := ctxTimeout(t, 10*time.Second)
	ends := map[string]func(*lock.Lease){
		"released": func(s *lock.Lease) {
			if err := s.Release(ctx); err != nil {
				t.Fatal(err)
			}
		},
		"abandoned": (*lock.Lease).Abandon,
		"lost": func(s *lock.Lease) { // at its deadline
			waitFor(t, 5*time.Second, "the deadline to pass", func() bool { return s.Err() != nil })
		},
	}
	for name, end := range ends {
		for _, askFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/asked while held=%v", name, askFirst), func(t *testing.T) {
				lease, err := l.TryAcquire(ctx, fmt.Sprintf("told/%s/%v", name, askFirst))
				if err != nil {
					t.Fatal(err)
				}
				var done <-chan struct{}
				if askFirst {
					done = lease.Done()
					select {
					case <-done:
						t.Fatal("Done is closed while the lease is held")
					default:
					}
				}
				end(lease)
				if !askFirst {
					done = lease.Done()
				}
				waitClosed(t, done, time.Second, "Done after the lease ended")
				if cause, want := context.Cause(lease.Context()), lease.Err(); want == nil || !errors.Is(cause, want) {
					t.Fatalf("context's cause = %v, Err = %v: want the same error", cause, want)
				}
			})
		}
	}
}

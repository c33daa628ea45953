package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// Mutual exclusion, shown on a read-modify-write that loses updates without
// it: 64 goroutines over 3 Lockers (three "processes") increment a plain
// Redis counter with GET, pause, SET.
func TestNoLostUpdateUnderContention(t *testing.T) {
	srv, _ := startRedis(t)
	const lockers, goroutines, rounds = 3, 64, 5
	ls := make([]*lock.Locker, lockers)
	for i := range ls {
		ls[i] = newLocker(t, srv.Client(t), lock.WithTTL(5*time.Second), lock.WithIdentity(fmt.Sprintf("proc-%d", i)))
	}
	work := srv.Client(t)
	ctx := ctxTimeout(t, 2*time.Minute)

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			l := ls[g%lockers]
			for range rounds {
				lease, err := l.Acquire(ctx, "counter-lock")
				if err != nil {
					errs <- err
					return
				}
				n, err := work.Get(ctx, "counter").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					errs <- err
				}
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) //nolint:gosec // G404: widens a race window; timing needs no cryptographic randomness
				if err := work.Set(ctx, "counter", n+1, 0).Err(); err != nil {
					errs <- err
				}
				if err := lease.Release(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := work.Get(ctx, "counter").Int()
	if err != nil {
		t.Fatal(err)
	}
	if want := goroutines * rounds; got != want {
		t.Fatalf("counter = %d, want %d: updates were lost", got, want)
	}
}

// A holder whose lease expired must not delete its successor's key. A blind
// DEL (or GET then DEL) would.
func TestLateReleaseDoesNotDeleteTheSuccessorsKey(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	slow := newLocker(t, srv.Client(t), lock.WithTTL(100*time.Millisecond), lock.WithoutWatchdog())
	next := newLocker(t, srv.Client(t), lock.WithTTL(10*time.Second))

	old, err := slow.TryAcquire(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, old.Done(), time.Second, "the first lease's end")
	successor, err := next.Acquire(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("late Release = %v, want ErrLeaseLost", err)
	}
	got, err := srv.Client(t).Get(ctx, "late").Result()
	if err != nil || got != successor.Value() {
		t.Fatalf("after the late release the key holds %q (%v), want the successor's value", got, err)
	}
}

// Losing the fence counter (a restart without persistence, an eviction) must
// not make tokens go back: the counter restarts from the server's clock.
func TestFenceStaysAboveEarlierTokensAfterTheCounterIsLost(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client)

	var highest uint64
	for range 5 {
		lease, err := l.TryAcquire(ctx, "fenced")
		if err != nil {
			t.Fatal(err)
		}
		highest = max(highest, lease.Fence())
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Del(ctx, protocol.FenceKey("fenced")).Err(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease) // lost with the empty restart below: ErrLeaseLost is fine
	if lease.Fence() <= highest {
		t.Fatalf("fence after the counter was lost = %d, not above the earlier %d", lease.Fence(), highest)
	}
	// Restarting the whole server empty is the same case.
	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	again, err := l.Acquire(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, again)
	if again.Fence() <= lease.Fence() {
		t.Fatalf("fence after an empty restart = %d, not above %d", again.Fence(), lease.Fence())
	}
}

// Renewal compares and extends: it fails once the key is gone and never
// re-creates it (a plain PEXPIRE or SET would resurrect a dead lease).
func TestRenewalOfAnExpiredKeyFailsAndDoesNotRecreateIt(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client, lock.WithTTL(10*time.Second), lock.WithoutWatchdog())

	lease, err := l.TryAcquire(ctx, "renew-expired")
	if err != nil {
		t.Fatal(err)
	}
	// Expire the key in Redis while the holder still believes in it (what a
	// clock jump on the server does).
	if err := client.PExpire(ctx, "renew-expired", time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := lease.Renew(ctx); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("Renew = %v, want ErrLeaseLost", err)
	}
	if n := client.Exists(ctx, "renew-expired").Val(); n != 0 {
		t.Fatal("renewal re-created the expired key")
	}
	waitClosed(t, lease.Done(), time.Second, "Done after a failed renewal")
	if !errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost) {
		t.Fatalf("context cause = %v, want ErrLeaseLost", context.Cause(lease.Context()))
	}
}

// Fence tokens strictly increase across 1,000 acquisitions by competing
// clients; each holder records its token while it holds the lock.
func TestFencesStrictlyIncreaseAcrossCompetingClients(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, 2*time.Minute)
	const total, workers = 1000, 8
	ls := []*lock.Locker{newLocker(t, srv.Client(t)), newLocker(t, srv.Client(t)), newLocker(t, srv.Client(t))}

	var (
		mu     sync.Mutex // for the race detector; the distributed lock orders the appends
		fences []uint64
		taken  atomic.Int64
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for taken.Add(1) <= total {
				lease, err := ls[w%len(ls)].Acquire(ctx, "sequence")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fences = append(fences, lease.Fence())
				mu.Unlock()
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(fences) != total {
		t.Fatalf("%d acquisitions, want %d", len(fences), total)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d = %d after %d: not strictly increasing", i, fences[i], fences[i-1])
		}
	}
}

// At no moment may the lock key exist without a TTL, whatever happens to
// clients between their steps. A sampler watches PTTL while clients acquire
// and are cut off at random points (connections closed mid-command, leases
// abandoned without release). The same sampler catches the naive SETNX-then-
// EXPIRE client that crashes between its two commands, so the check can fail.
func TestLockKeyNeverExistsWithoutTTL(t *testing.T) {
	srv, observer := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)

	sample := func(key string, stop <-chan struct{}) <-chan int {
		bad := make(chan int, 1)
		go func() {
			defer close(bad)
			count := 0
			for {
				select {
				case <-stop:
					bad <- count
					return
				default:
				}
				if observer.PTTL(ctx, key).Val() == -1 { // -1: exists without TTL
					count++
				}
			}
		}()
		return bad
	}

	t.Run("redlease", func(t *testing.T) {
		stop := make(chan struct{})
		bad := sample("ttl-always", stop)
		for i := range 60 {
			client := srv.Client(t)
			l, err := lock.New(client, lock.WithTTL(30*time.Millisecond), lock.WithoutWatchdog())
			if err != nil {
				t.Fatal(err)
			}
			// Cut the client off at a random point of its acquisition.
			go func() {
				time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond) //nolint:gosec // G404: a random cut-off point; timing needs no cryptographic randomness
				// Closing mid-acquisition is the point; what Close returns is not.
				_ = client.Close()
			}()
			lease, err := l.TryAcquire(ctx, "ttl-always")
			if err == nil && i%2 == 0 {
				_ = lease.Release(ctx) // may fail: the client may be closed
			}
			_ = l.Close()
			time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) //nolint:gosec // G404: random spacing; timing needs no cryptographic randomness
		}
		close(stop)
		if n := <-bad; n != 0 {
			t.Fatalf("the lock key existed without a TTL in %d samples", n)
		}
	})

	t.Run("naive SETNX then EXPIRE is caught", func(t *testing.T) {
		stop := make(chan struct{})
		bad := sample("naive", stop)
		naive := srv.Client(t)
		if !naive.SetNX(ctx, "naive", "locked", 0).Val() {
			t.Fatal("naive SETNX failed")
		}
		// The client "crashes" here, before EXPIRE.
		time.Sleep(50 * time.Millisecond)
		close(stop)
		if n := <-bad; n == 0 {
			t.Fatal("the sampler did not notice a key without TTL: the check cannot fail")
		}
	})
}

// The lock value must differ per acquisition, even for one identity: a
// fixed value would let a stale holder pass for the current one.
func TestEveryAcquisitionWritesItsOwnValue(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client, lock.WithIdentity("same-identity"))
	seen := map[string]bool{}
	for i := range 20 {
		lease, err := l.TryAcquire(ctx, "values")
		if err != nil {
			t.Fatal(err)
		}
		if seen[lease.Value()] {
			t.Fatalf("acquisition %d reused value", i)
		}
		seen[lease.Value()] = true
		if got := client.Get(ctx, "values").Val(); got != lease.Value() {
			t.Fatalf("Redis holds %q, lease says %q", got, lease.Value())
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Three permits, 16 goroutines over 8 Lockers (each on its own client, as
// 8 pods), acquiring and releasing for 1.5 s with random holds: no moment
// has more than 3 goroutines believing they hold a permit, and the limit is
// reached (the contention is real).
func TestPermitsNeverExceedNAcrossLockers(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	const permits, lockers, goroutines = 3, 8, 16
	ls := separateLockers(t, srv.Addr(), lockers, lock.WithTTL(5*time.Second))
	var (
		holding, most, taken atomic.Int64
		wg                   sync.WaitGroup
		stop                 = time.Now().Add(1500 * time.Millisecond)
	)
	for g := range goroutines {
		sem := ls[g%lockers].Semaphore("pool", permits)
		wg.Go(func() {
			for time.Now().Before(stop) {
				lease, err := sem.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				n := holding.Add(1)
				for m := most.Load(); n > m; m = most.Load() {
					if most.CompareAndSwap(m, n) {
						break
					}
				}
				taken.Add(1)
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) //nolint:gosec // G404: random holds; timing needs no cryptographic randomness
				holding.Add(-1)
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d acquisitions, at most %d held at once", taken.Load(), most.Load())
	if most.Load() > permits {
		t.Fatalf("%d permits held at once, more than %d", most.Load(), permits)
	}
	if most.Load() < permits {
		t.Fatalf("at most %d held at once: the test never reached the limit of %d", most.Load(), permits)
	}
}

// A holder that dies (here: Abandon, which stops renewing and tells Redis
// nothing, as a crash) keeps its permit only until its TTL runs out; a
// waiter then gets it, woken by the expiry it was told of, not by polling.
func TestADeadHoldersPermitComesBackWithItsTTL(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 20*time.Second)
	const ttl = 500 * time.Millisecond
	ls := separateLockers(t, srv.Addr(), 2, lock.WithTTL(ttl))
	dead := ls[0].Semaphore("crashy", 2)
	for range 2 {
		lease, err := dead.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lease.Abandon()
	}
	died := time.Now()
	client.ConfigResetStat(ctx)
	lease, err := ls[1].Semaphore("crashy", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	waited := time.Since(died)
	t.Logf("permit back after %v, %d scripts", waited, scriptCalls(ctx, t, client))
	if waited < ttl-50*time.Millisecond || waited > ttl+time.Second {
		t.Fatalf("the dead holder's permit came back after %v, want about its TTL %v", waited, ttl)
	}
	if n := scriptCalls(ctx, t, client); n > 5 {
		t.Fatalf("%d scripts while waiting %v: the waiter polls", n, waited)
	}
}

// Lowering the count while more permits are held revokes nothing: the
// holders keep renewing. A caller at the lower count is refused, and a
// waiter at it gets a permit only once the holders are below its count —
// even when a holder at the old count hands it one earlier.
func TestLoweringPermitsRevokesNothing(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 20*time.Second)
	ls := separateLockers(t, srv.Addr(), 4, lock.WithTTL(5*time.Second))
	leases := make([]*lock.Lease, 3)
	for i := range leases {
		var err error
		if leases[i], err = ls[i].Semaphore("shrinking", 3).TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, leases[i])
	}
	lowered := ls[3].Semaphore("shrinking", 2)
	if _, err := lowered.TryAcquire(ctx); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryAcquire at the lowered count = %v, want ErrNotAcquired", err)
	}
	for i, l := range leases {
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("holder %d's renewal after the count was lowered: %v", i, err)
		}
	}
	got := make(chan *lock.Lease, 1)
	go func() {
		l, err := lowered.Acquire(ctx)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- l
	}()
	waitFor(t, 2*time.Second, "the waiter to queue", func() bool {
		return client.ZCard(ctx, protocol.PermitLineKey("shrinking")).Val() == 1
	})
	// A holder at 3 releases and hands the waiter a permit: two others
	// still hold, as many as the waiter allows, so it gives it back.
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
		t.Fatal("the waiter took a third permit at a count of 2")
	case <-time.After(300 * time.Millisecond):
	}
	for i, l := range leases[1:] {
		if err := l.Err(); err != nil {
			t.Fatalf("holder %d lost its permit: %v", i+1, err)
		}
	}
	released := time.Now()
	if err := leases[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l, ok := <-got:
		if !ok {
			return
		}
		releaseAtEnd(t, l)
		if d := time.Since(released); d > 250*time.Millisecond {
			t.Fatalf("the waiter got its permit %v after the holders went below its count", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never got a permit once the holders were below its count")
	}
}

// Every permit's fence is above the fence of every permit acquired before
// it was asked for, whichever Locker took them: one counter per semaphore.
func TestPermitFencesStrictlyIncrease(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	ls := separateLockers(t, srv.Addr(), 6, lock.WithTTL(5*time.Second))
	type taken struct {
		asked, got time.Time
		fence      uint64
	}
	var (
		mu  sync.Mutex
		all []taken
		wg  sync.WaitGroup
	)
	for _, l := range ls {
		sem := l.Semaphore("fenced-pool", 3)
		wg.Go(func() {
			for range 40 {
				asked := time.Now()
				lease, err := sem.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, taken{asked, time.Now(), lease.Fence()})
				mu.Unlock()
				time.Sleep(time.Millisecond)
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, a := range all {
		if seen[a.fence] {
			t.Fatalf("fence %d handed out twice", a.fence)
		}
		seen[a.fence] = true
		for _, b := range all {
			if a.got.Before(b.asked) && a.fence >= b.fence {
				t.Fatalf("a permit asked for after another was taken got fence %d, not above %d", b.fence, a.fence)
			}
		}
	}
}

// Releasing twice, or after the permit expired, frees no other holder's
// permit: release compares the value.
func TestReleasingTwiceOrAfterExpiryFreesNoOtherPermit(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, 20*time.Second)
	short := newLocker(t, srv.Client(t), lock.WithTTL(200*time.Millisecond), lock.WithoutWatchdog())
	ls := separateLockers(t, srv.Addr(), 2, lock.WithTTL(10*time.Second))
	expired, err := short.Semaphore("strict", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ls[0].Semaphore("strict", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	c, err := ls[1].Semaphore("strict", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the expired permit did not come back: %v", err)
	}
	releaseAtEnd(t, c)
	if err := expired.Release(ctx); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("release after expiry = %v, want ErrLeaseLost", err)
	}
	sem := ls[1].Semaphore("strict", 2)
	if h, err := sem.Inspect(ctx); err != nil || h.Held() != 2 {
		t.Fatalf("after the late release %d permits held (%v), want b's and c's", h.Held(), err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); !errors.Is(err, lock.ErrReleased) {
		t.Fatalf("second release = %v, want ErrReleased", err)
	}
	h, err := sem.Inspect(ctx)
	if err != nil || h.Held() != 1 || h.Holders[0].Identity != "pod-1" || h.Holders[0].Fence != c.Fence() || h.Holders[0].Pending {
		t.Fatalf("after the double release: %+v, %v; want c alone, with its fence", h, err)
	}
}

// Waiters are woken by hand-off: 12 Lockers (4 per permit) contend for 3
// permits, each acquiring 10 times with 1 ms holds. A release hands its
// permit to the first waiter in line and tells only that one, so the
// scripts per acquisition stay a handful, as for a lock
// (TestOneAttemptPerReleaseAcrossLockers).
func TestOneAttemptPerPermitReleaseAcrossLockers(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	const permits, contenders, rounds = 3, 12, 10
	ls := separateLockers(t, srv.Addr(), contenders, lock.WithTTL(5*time.Second))
	perAcquisition := scriptsPerAcquisition(ctx, t, admin, rounds, ls, func(l *lock.Locker) func(context.Context) (*lock.Lease, error) {
		return l.Semaphore("herd-pool", permits).Acquire
	})
	t.Logf("%.1f scripts per acquisition (acquire attempts and releases) for %d Lockers on %d permits", perAcquisition, contenders, permits)
	if perAcquisition > 6 {
		t.Fatalf("%.1f scripts per acquisition: releases wake more than the next waiter", perAcquisition)
	}
}

// A permit is a lease like any other: the watchdog keeps it past its TTL,
// and WithMaxHold ends it.
func TestAPermitIsRenewedAndCappedByMaxHold(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	const ttl, maxHold = 150 * time.Millisecond, 600 * time.Millisecond
	l := newLocker(t, client, lock.WithTTL(ttl), lock.WithMaxHold(maxHold))
	sem := l.Semaphore("capped", 1)
	start := time.Now()
	lease, err := sem.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if h, err := sem.Inspect(ctx); err != nil || lease.Err() != nil || h.Held() != 1 || h.Holders[0].TTL <= 0 {
		t.Fatalf("after 3 TTLs: %+v, %v, lease %v; want the permit renewed", h, err, lease.Err())
	}
	waitClosed(t, lease.Done(), 5*maxHold, "the end of a permit past its max hold")
	if held := time.Since(start); held < maxHold-ttl || held > maxHold+ttl {
		t.Fatalf("permit held %v, want about %v", held, maxHold)
	}
	if !errors.Is(lease.Err(), lock.ErrMaxHoldExceeded) {
		t.Fatalf("Err = %v, want ErrMaxHoldExceeded", lease.Err())
	}
	other, err := newLocker(t, client).Semaphore("capped", 1).Acquire(ctxTimeout(t, 2*time.Second))
	if err != nil {
		t.Fatalf("no permit after the max hold: %v", err)
	}
	releaseAtEnd(t, other)
}

// Under WithReplicaAck a permit counts only once replicas acknowledged it:
// without a replica the attempt fails with ErrNotReplicated and gives the
// permit back.
func TestAPermitWithoutReplicaAckIsGivenBack(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	sem := newLocker(t, client, lock.WithReplicaAck(1, 100*time.Millisecond)).Semaphore("acked-pool", 2)
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("TryAcquire without a replica = %v, want ErrNotReplicated", err)
	}
	if h, err := sem.Inspect(ctx); err != nil || h.Held() != 0 {
		t.Fatalf("after the unreplicated attempt %d permits held (%v), want none", h.Held(), err)
	}
}

// Semaphores refuse what they cannot do: a count outside [1, MaxPermits], a
// bad key, and Redlock (a majority per holder does not bound the holders).
func TestSemaphoreRefusals(t *testing.T) {
	_, client := startRedis(t)
	nodes := redistest.StartNodes(t, 3)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client)
	rl := newRedlock(t, []redis.UniversalClient{nodes[0].Client(t), nodes[1].Client(t), nodes[2].Client(t)})
	for _, sem := range []*lock.Semaphore{
		l.Semaphore("k", 0), l.Semaphore("k", -1), l.Semaphore("k", lock.MaxPermits+1),
		l.Semaphore("", 3), l.Semaphore("a b", 3), rl.Semaphore("k", 3),
	} {
		if _, err := sem.TryAcquire(ctx); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Errorf("TryAcquire(%q, %d) = %v, want ErrInvalidConfig", sem.Key(), sem.Permits(), err)
		}
		if _, err := sem.Acquire(ctx); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Errorf("Acquire(%q, %d) = %v, want ErrInvalidConfig", sem.Key(), sem.Permits(), err)
		}
		if _, err := sem.Inspect(ctx); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Errorf("Inspect(%q, %d) = %v, want ErrInvalidConfig", sem.Key(), sem.Permits(), err)
		}
	}
	lease, err := l.Semaphore("k", lock.MaxPermits).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	// A lock's key is no semaphore and a semaphore's is no lock.
	if _, err := l.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("lock on a semaphore's key = %v, want ErrNotAcquired", err)
	}
}

// On Redis Cluster the holder set, its holders, line, counter and channel
// share the key's slot: permits, refusals and hand-offs work there too.
func TestClusterSemaphores(t *testing.T) {
	cluster := redistest.StartCluster(t)
	ctx := ctxTimeout(t, time.Minute)
	ls := []*lock.Locker{newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second)), newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))}
	for _, key := range []string{"a", "orders/42", "jobs{nightly}", "z", "k7"} {
		sem := ls[0].Semaphore(key, 2)
		var held []*lock.Lease
		for range 2 {
			lease, err := sem.TryAcquire(ctx)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			held = append(held, lease)
		}
		if _, err := sem.TryAcquire(ctx); !errors.Is(err, lock.ErrNotAcquired) || !strings.Contains(err.Error(), "permit") {
			t.Fatalf("%s: a third permit = %v", key, err)
		}
		got := make(chan time.Time, 1)
		go func() {
			lease, err := ls[1].Semaphore(key, 2).Acquire(ctx)
			if err == nil {
				got <- time.Now()
				_ = lease.Release(ctx) // races the end of the test: not checked here
			}
			close(got)
		}()
		time.Sleep(200 * time.Millisecond)
		released := time.Now()
		if err := held[0].Release(ctx); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		expectHandoff(t, got, released, time.Second, 10*time.Second, key+": slow hand-off", key+": no hand-off")
		if err := held[1].Release(ctx); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
}

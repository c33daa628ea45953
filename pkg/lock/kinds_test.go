package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// kind is a lock or a semaphore handle on a key, as a caller uses it.
type kind struct {
	name string
	// handle binds l to key.
	handle func(l *lock.Locker, key string) acquirer
	// lineKey is where this kind's waiters queue.
	lineKey func(key string) string
	// permits is how many leases hold the key in full.
	permits int
}

type acquirer interface {
	Acquire(ctx context.Context) (*lock.Lease, error)
	TryAcquire(ctx context.Context) (*lock.Lease, error)
}

var (
	lockKind = kind{"lock", func(l *lock.Locker, key string) acquirer { return l.Mutex(key) }, protocol.LineKey, 1}
	semKind  = kind{"semaphore", func(l *lock.Locker, key string) acquirer { return l.Semaphore(key, 3) }, protocol.PermitLineKey, 3}
	// sharedKind's permits is how many the tests take: shared holds have no bound.
	sharedKind = kind{"shared", func(l *lock.Locker, key string) acquirer { return sharedHandle{l, key} }, protocol.LineKey, 3}
)

// sharedHandle is a Locker's shared holds of one key, as an acquirer.
type sharedHandle struct {
	l   *lock.Locker
	key string
}

func (h sharedHandle) Acquire(ctx context.Context) (*lock.Lease, error) {
	return h.l.AcquireShared(ctx, h.key)
}

func (h sharedHandle) TryAcquire(ctx context.Context) (*lock.Lease, error) {
	return h.l.TryAcquireShared(ctx, h.key)
}

// A key is a lock (held exclusively or shared) or a semaphore, and a
// caller of any kind meets the other kinds' holders on it (a DistributedLock whose spec.permits changed
// while held; two programs configured differently). For every pair of
// holder and waiter kinds, on one server and on Cluster: the waiter waits
// (it is not failed by the key's type) and takes the key once the holder
// is gone; a waiter that gives up leaves its line; a lease whose key was
// lost and retaken by the other kind learns at its next renewal that it is
// lost. A shared hold and a semaphore's permits are both sorted sets: the
// scores tell them apart (protocol 7), and neither kind takes the other's
// key. The lock scripts used to GET the key, which fails with WRONGTYPE
// on a semaphore's sorted set: the lock waiter failed on its second
// attempt, kept its place when it gave up, and a lock's renewal returned
// the error instead of ErrLeaseLost.
func TestLocksAndSemaphoresMeetOnOneKey(t *testing.T) {
	topologies := []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"one server", func(t *testing.T) redis.UniversalClient { _, c := startRedis(t); return c }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return redistest.StartCluster(t).Client(t) }},
	}
	pairs := []struct{ holder, waiter kind }{{semKind, lockKind}, {lockKind, semKind},
		{semKind, sharedKind}, {sharedKind, semKind}, {lockKind, sharedKind}, {sharedKind, lockKind}}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			client := topo.client(t)
			for _, p := range pairs {
				t.Run(p.holder.name+" held, "+p.waiter.name+" waits", func(t *testing.T) {
					waiterWaitsForTheOtherKind(t, client, p.holder, p.waiter)
				})
				t.Run(p.holder.name+" held, "+p.waiter.name+" gives up", func(t *testing.T) {
					waiterGivesUpOnTheOtherKind(t, client, p.holder, p.waiter)
				})
				t.Run(p.waiter.name+" lost to a "+p.holder.name, func(t *testing.T) {
					renewalFindsTheOtherKind(t, client, p.waiter, p.holder)
				})
			}
		})
	}
}

func waiterWaitsForTheOtherKind(t *testing.T, client redis.UniversalClient, holder, waiter kind) {
	ctx := ctxTimeout(t, 20*time.Second)
	key := "kinds-wait-" + holder.name + "-" + waiter.name
	lease, err := holder.handle(newLocker(t, client, lock.WithTTL(2*time.Second)), key).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := newLocker(t, client, lock.WithTTL(2*time.Second), lock.WithIdentity("waiter"))
	got := make(chan error, 1)
	go func() {
		next, err := waiter.handle(w, key).Acquire(ctx)
		if err == nil {
			err = next.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, 2*time.Second, "the waiter to queue", func() bool {
		return client.ZCard(ctx, waiter.lineKey(key)).Val() == 1
	})
	// Two more attempts at least (it looks again when the holder's TTL,
	// renewed by the watchdog, would have run out).
	select {
	case err := <-got:
		t.Fatalf("the %s waiter returned while a %s held the key: %v", waiter.name, holder.name, err)
	case <-time.After(2500 * time.Millisecond):
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the %s waiter, once the %s was released: %v", waiter.name, holder.name, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the %s waiter did not take the key within 5 s of the %s's release", waiter.name, holder.name)
	}
}

func waiterGivesUpOnTheOtherKind(t *testing.T, client redis.UniversalClient, holder, waiter kind) {
	ctx := ctxTimeout(t, 20*time.Second)
	key := "kinds-give-up-" + holder.name + "-" + waiter.name
	lease, err := holder.handle(newLocker(t, client, lock.WithTTL(5*time.Second)), key).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	w := newLocker(t, client, lock.WithTTL(time.Second))
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond) // past its second attempt
	defer cancel()
	if _, err := waiter.handle(w, key).Acquire(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the %s waiter giving up: %v, want its context's deadline", waiter.name, err)
	}
	waitFor(t, 2*time.Second, "the waiter to leave its line", func() bool {
		return client.Exists(ctx, waiter.lineKey(key)).Val() == 0
	})
}

// renewalFindsTheOtherKind: a lease of kind lost loses its key (the
// server lost it), other takes it, and lost's renewal says the lease is
// lost.
func renewalFindsTheOtherKind(t *testing.T, client redis.UniversalClient, lost, other kind) {
	ctx := ctxTimeout(t, 20*time.Second)
	key := "kinds-lost-" + lost.name + "-" + other.name
	lease, err := lost.handle(newLocker(t, client, lock.WithTTL(5*time.Second), lock.WithoutWatchdog()), key).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	if err := client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	taker, err := other.handle(newLocker(t, client), key).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, taker)
	if err := lease.Renew(ctx); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("renewing a %s whose key a %s holds = %v, want ErrLeaseLost", lost.name, other.name, err)
	}
	if err := taker.Err(); err != nil {
		t.Fatalf("the %s that took the key: %v", other.name, err)
	}
}

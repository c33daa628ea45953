package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// WAIT on a master without replicas cannot be satisfied: the acquisition is
// released and reported, never handed out as if it were durable.
func TestReplicaAckWithoutReplicasFailsAndReleases(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, client, lock.WithReplicaAck(1, 100*time.Millisecond))
	lease, err := l.TryAcquire(ctx, "replicated")
	if !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("TryAcquire = %v, %v; want ErrNotReplicated", lease, err)
	}
	if n := client.Exists(ctx, "replicated").Val(); n != 0 {
		t.Fatal("the unreplicated key was left in Redis")
	}
	// Blocking Acquire reports it too instead of retrying forever.
	if _, err := l.Acquire(ctx, "replicated"); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("Acquire = %v, want ErrNotReplicated", err)
	}
}

// With a replica attached, WAIT is satisfied and the acquisition is on the
// replica before the lease is handed out.
func TestReplicaAckWithAReplicaSucceeds(t *testing.T) {
	group := redistest.StartReplicated(t, 1)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, group.Master.Client(t), lock.WithReplicaAck(1, time.Second))
	lease, err := l.TryAcquire(ctx, "replicated")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	if got := group.Replicas[0].Client(t).Get(ctx, "replicated").Val(); got != lease.Value() {
		t.Fatalf("replica holds %q right after the acquisition, want the lease's value", got)
	}
	fence, err := group.Replicas[0].Client(t).Get(ctx, protocol.FenceKey("replicated")).Uint64()
	if err != nil || fence != lease.Fence() {
		t.Fatalf("replica's fence counter = %d (%v), want %d", fence, err, lease.Fence())
	}
}

// A renewal under WithReplicaAck counts only once replicas acknowledged it.
// Reproduced before: the acquisition is replicated, the replica is cut off
// halfway through the TTL, the renewal succeeds on the master alone and
// extends the local deadline; the master dies, the replica is promoted
// with the old expiry, and a second holder takes the lock while the first
// still believes it holds it. Now the unacknowledged renewal fails with
// ErrNotReplicated, the deadline stays where the replica's copy expires,
// and the first lease ends before the second begins.
func TestRenewalUnderReplicaAckNeverOutlivesTheReplica(t *testing.T) {
	g := redistest.StartReplicated(t, 1)
	ctx := ctxTimeout(t, 30*time.Second)
	const ttl = 3 * time.Second
	a := lockerOnDoomedMaster(t, g.Master.Client(t), lock.WithTTL(ttl), lock.WithReplicaAck(1, 200*time.Millisecond), lock.WithoutWatchdog())
	first, err := a.TryAcquire(ctx, "renewed")
	if err != nil {
		t.Fatal(err)
	}
	acquiredUntil := first.ValidUntil()
	time.Sleep(ttl / 2)
	isolateReplica(t, g)
	if err := first.Renew(ctx); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("Renew with the replica cut off = %v, want ErrNotReplicated", err)
	}
	if got := first.ValidUntil(); got.After(acquiredUntil) {
		t.Fatalf("an unacknowledged renewal moved the local deadline by %v", got.Sub(acquiredUntil))
	}
	failOver(t, g)
	b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(ttl))
	second, err := b.Acquire(ctx, "renewed") // waits out the replica's copy
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, second)
	if err := first.Err(); err == nil {
		t.Fatalf("two holders: the first lease is still valid for %v after the promoted replica handed the lock out again", time.Until(first.ValidUntil()))
	}
}

// With the replica attached, a renewal is acknowledged and extends the
// lease as usual, on the watchdog too.
func TestRenewalUnderReplicaAckExtendsWhenAcknowledged(t *testing.T) {
	g := redistest.StartReplicated(t, 1)
	ctx := ctxTimeout(t, 30*time.Second)
	// A TTL far above a WAIT round on a loaded machine; Acquire retries an
	// attempt whose WAIT took longer than its validity.
	l := newLocker(t, g.Master.Client(t), lock.WithTTL(2*time.Second), lock.WithReplicaAck(1, 500*time.Millisecond))
	lease, err := l.Acquire(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	time.Sleep(5 * time.Second) // two and a half TTLs: only acknowledged renewals keep it
	if err := lease.Err(); err != nil {
		t.Fatalf("lease lost with a healthy replica: %v", err)
	}
	if pttl := g.Replicas[0].Client(t).PTTL(ctx, "watched").Val(); pttl <= 0 {
		t.Fatalf("the replica's copy has PTTL %v: renewals did not reach it", pttl)
	}
}

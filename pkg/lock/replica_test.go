package lock_test

import (
	"errors"
	"testing"
	"time"

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
	defer lease.Release(ctx)
	if got := group.Replicas[0].Client(t).Get(ctx, "replicated").Val(); got != lease.Value() {
		t.Fatalf("replica holds %q right after the acquisition, want the lease's value", got)
	}
	fence, err := group.Replicas[0].Client(t).Get(ctx, lock.FenceKey("replicated")).Uint64()
	if err != nil || fence != lease.Fence() {
		t.Fatalf("replica's fence counter = %d (%v), want %d", fence, err, lease.Fence())
	}
}

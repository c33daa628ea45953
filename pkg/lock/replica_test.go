package lock_test

import (
	"errors"
	"testing"
	"time"

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

package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// isolateReplica stops replication to the replica without losing anything
// already sent: the replica is paused and the master drops its link, so the
// next writes exist on the master only — the window asynchronous
// replication leaves open before a crash.
func isolateReplica(t *testing.T, g *redistest.Replicated) {
	t.Helper()
	g.Replicas[0].Pause()
	if err := g.Master.Client(t).ClientKillByFilter(t.Context(), "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
}

// lockerOnDoomedMaster is newLocker for a Locker whose server the test
// kills: its Close cannot release there, and says so.
func lockerOnDoomedMaster(t *testing.T, client redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.New(client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// failOver kills the master and promotes the (isolated) replica.
func failOver(t *testing.T, g *redistest.Replicated) {
	t.Helper()
	g.Master.Kill()
	g.Replicas[0].Resume()
	if err := g.Replicas[0].Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Failover before replication, shown both ways. Without WAIT, the master
// acknowledges an acquisition, dies before replicating it, and the promoted
// replica hands the same lock to a second holder: this unsafe case is
// asserted, not hoped away. With WithReplicaAck(1), the unreplicated
// acquisition is refused and a replicated one survives the failover.
func TestFailoverBeforeReplication(t *testing.T) {
	t.Run("async replication: two holders after promotion", func(t *testing.T) {
		g := redistest.StartReplicated(t, 1)
		ctx := ctxTimeout(t, 30*time.Second)
		a := lockerOnDoomedMaster(t, g.Master.Client(t), lock.WithTTL(10*time.Second))
		isolateReplica(t, g)
		first, err := a.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		failOver(t, g)
		b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(10*time.Second))
		second, err := b.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatalf("the promoted replica refused the lock (%v): expected the documented unsafe outcome", err)
		}
		releaseAtEnd(t, second)
		if first.Err() != nil || second.Err() != nil {
			t.Fatalf("expected both leases held: first %v, second %v", first.Err(), second.Err())
		}
		t.Log("observed: two holders of one lock after an asynchronous failover (documented: use waitForReplicas)")
	})

	t.Run("WAIT refuses the unreplicated acquisition", func(t *testing.T) {
		g := redistest.StartReplicated(t, 1)
		ctx := ctxTimeout(t, 30*time.Second)
		a := lockerOnDoomedMaster(t, g.Master.Client(t), lock.WithTTL(10*time.Second), lock.WithReplicaAck(1, 200*time.Millisecond))
		isolateReplica(t, g)
		if _, err := a.TryAcquire(ctx, "job"); !errors.Is(err, lock.ErrNotReplicated) {
			t.Fatalf("TryAcquire with the replica cut off = %v, want ErrNotReplicated", err)
		}
		failOver(t, g)
		b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(10*time.Second))
		second, err := b.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := second.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("WAIT: a replicated lease survives the promotion", func(t *testing.T) {
		g := redistest.StartReplicated(t, 1)
		ctx := ctxTimeout(t, 30*time.Second)
		a := lockerOnDoomedMaster(t, g.Master.Client(t), lock.WithTTL(10*time.Second), lock.WithReplicaAck(1, time.Second))
		first, err := a.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		isolateReplica(t, g)
		failOver(t, g)
		b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(10*time.Second))
		if _, err := b.TryAcquire(ctx, "job"); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("second holder after failover: %v, want ErrNotAcquired (first lease %v)", err, first.Err())
		}
	})
}

// Fences across a failover, shown both ways. Without WAIT the last increment
// can be lost with the master, and the next holder on the promoted replica
// gets the same token again (asserted, documented). With WAIT every
// increment is on the replica before the lease counts, so tokens keep
// increasing across the failover.
func TestFencesAcrossFailover(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   []lock.Option
		repeat bool
	}{
		{"async replication: a fence repeats", nil, true},
		{"WAIT: fences keep increasing", []lock.Option{lock.WithReplicaAck(1, time.Second)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := redistest.StartReplicated(t, 1)
			ctx := ctxTimeout(t, 30*time.Second)
			opts := append([]lock.Option{lock.WithTTL(2 * time.Second)}, tt.opts...)
			a := lockerOnDoomedMaster(t, g.Master.Client(t), opts...)
			// Earlier acquisitions, replicated (WAIT from the test when the
			// locker does not ask for it).
			for range 3 {
				l, err := a.TryAcquire(ctx, "fenced")
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := g.Master.Client(t).Wait(ctx, 1, time.Second).Result(); err != nil || n != 1 {
				t.Fatalf("replica did not catch up: %d %v", n, err)
			}
			var last uint64
			if tt.repeat {
				isolateReplica(t, g) // this acquisition exists on the master only
				lease, err := a.TryAcquire(ctx, "fenced")
				if err != nil {
					t.Fatal(err)
				}
				last = lease.Fence()
			} else {
				lease, err := a.TryAcquire(ctx, "fenced") // replicated before it counts
				if err != nil {
					t.Fatal(err)
				}
				last = lease.Fence()
				isolateReplica(t, g)
			}
			failOver(t, g)
			b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(2*time.Second))
			next, err := b.Acquire(ctx, "fenced") // waits out a replicated key's TTL
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, next)
			if tt.repeat {
				if next.Fence() > last {
					t.Fatalf("fence %d after failover is above %d: the unsafe case was not reproduced", next.Fence(), last)
				}
				t.Logf("observed: fence %d handed out again after the failover lost %d (documented: use waitForReplicas)", next.Fence(), last)
				return
			}
			if next.Fence() <= last {
				t.Fatalf("fence %d after failover not above %d", next.Fence(), last)
			}
		})
	}
}

// Hand the same lock context through the whole Cluster path: keys spread
// over slots, fence counters in their key's slot, hand-off by message.
func TestClusterLocks(t *testing.T) {
	cluster := redistest.StartCluster(t)
	ctx := ctxTimeout(t, time.Minute)
	l := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))

	for _, key := range []string{"a", "b", "orders/42", "jobs{nightly}", "z", "billing/settle", "k7", "k8"} {
		lease, err := l.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if lease.Fence() == 0 {
			t.Fatalf("%s: no fence", key)
		}
		again, err := l.TryAcquire(ctx, key)
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("%s: second TryAcquire = %v, %v", key, again, err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", key, err)
		}
	}

	holder, err := l.TryAcquire(ctx, "handoff")
	if err != nil {
		t.Fatal(err)
	}
	other := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))
	got := make(chan time.Time, 1)
	go func() {
		lease, err := other.Acquire(ctx, "handoff")
		if err == nil {
			got <- time.Now()
			_ = lease.Release(ctx) // races the end of the test (other's Close): the outcome is not checked here
		}
		close(got)
	}()
	time.Sleep(300 * time.Millisecond)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at, ok := <-got:
		if !ok {
			t.Fatal("the waiter failed")
		}
		if d := at.Sub(released); d > time.Second {
			t.Fatalf("hand-off on Cluster took %v: the release message did not wake the waiter", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no hand-off on Cluster")
	}

	// WAIT goes to the master that owns the key; without replicas it fails.
	acked := newLocker(t, cluster.Client(t), lock.WithReplicaAck(1, 100*time.Millisecond))
	if _, err := acked.TryAcquire(ctx, "replicated"); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("WAIT on a Cluster without replicas = %v, want ErrNotReplicated", err)
	}
}

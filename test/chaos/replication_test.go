package chaos

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Master killed before replicating, replica promoted. Without WAIT, holder
// A's acquisition dies with the master and B gets the lock from the
// promoted replica while A still believes: S1 catches it. With
// WithReplicaAck(1), A's unreplicated acquisition never counts.
func TestMasterKilledBeforeReplicating(t *testing.T) {
	variants(t, "redlease with WAIT", "no WAIT", time.Minute, func(t *testing.T, s *scenario) {
		var opts []lock.Option
		if !s.naive {
			opts = []lock.Option{lock.WithReplicaAck(1, 200*time.Millisecond)}
		}
		g := redistest.StartReplicated(t, 1)
		ctx := s.ctx
		// Its master is killed: Close cannot release there.
		a := newLocker(t, g.Master.Client(t), append([]lock.Option{lock.WithTTL(5 * time.Second), lock.WithIdentity("a")}, opts...)...)

		// Cut replication, so A's acquisition exists on the master only.
		g.Replicas[0].Pause()
		if err := g.Master.Client(t).ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
			t.Fatal(err)
		}
		aLease, aErr := a.TryAcquire(ctx, "job")
		aFrom := Mono()
		if aErr != nil && !errors.Is(aErr, lock.ErrNotReplicated) {
			t.Fatal(aErr)
		}
		g.Master.Kill()
		g.Replicas[0].Resume()
		if err := g.Replicas[0].Promote(ctx); err != nil {
			t.Fatal(err)
		}
		b := newLocker(t, g.Replicas[0].Client(t), lock.WithTTL(5*time.Second), lock.WithIdentity("b"))
		bLease, err := b.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		s.holdFor("b", bLease, 50*time.Millisecond)
		if aErr == nil {
			s.h.Claim(Claim{Client: "a", Key: "job", Fence: aLease.Fence(), From: aFrom, Until: Mono()})
		}
		if !s.naive && aErr == nil {
			t.Fatal("an unreplicated acquisition was handed out despite WAIT")
		}
		s.check("S1", Overlaps(s.h.Claims()))
	})
}

// min-replicas-to-write refuses writes when replicas vanish: with the
// guard, an acquisition on a master that lost its replica fails (NOREPLICAS)
// instead of creating a lease that a failover would forget; without it,
// the master accepts it.
func TestMinReplicasToWriteRefusesWhenReplicasVanish(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		name := "guarded"
		if !guarded {
			name = "unguarded"
		}
		t.Run(name, func(t *testing.T) {
			g := redistest.StartReplicated(t, 1)
			ctx := ctxFor(t, time.Minute)
			m := g.Master.Client(t)
			if guarded {
				if err := m.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
					t.Fatal(err)
				}
				if err := m.ConfigSet(ctx, "min-replicas-max-lag", "1").Err(); err != nil {
					t.Fatal(err)
				}
			}
			l := newLocker(t, m, lock.WithTTL(time.Second))
			lease, err := l.TryAcquire(ctx, "guarded")
			if err != nil {
				t.Fatalf("with the replica up: %v", err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatalf("release with the replica up: %v", err)
			}
			g.Replicas[0].Kill()
			// The master notices within min-replicas-max-lag plus its 1s ping.
			deadline := time.Now().Add(15 * time.Second)
			for {
				lease, err = l.TryAcquire(ctx, "guarded")
				if err != nil || !guarded || time.Now().After(deadline) {
					break
				}
				// The master may notice the lost replica between the
				// acquisition and this release: the release (a write) is
				// then refused with NOREPLICAS and the key expires with its
				// TTL, while the next TryAcquire sees NOREPLICAS anyway.
				if err := lease.Release(ctx); err != nil && !strings.Contains(err.Error(), "NOREPLICAS") {
					t.Fatalf("release while the master has not noticed yet: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if guarded {
				if err == nil || !strings.Contains(err.Error(), "NOREPLICAS") {
					t.Fatalf("acquisition without replicas = %v, want NOREPLICAS", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unguarded master refused: %v", err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatalf("unguarded release: %v", err)
			}
			t.Log("observed: without min-replicas-to-write the master hands out leases no replica has (documented)")
		})
	}
}

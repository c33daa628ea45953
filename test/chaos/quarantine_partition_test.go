package chaos

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
)

// maxLag is the min-replicas-max-lag of the partition scenarios (whole
// seconds on the server).
const maxLag = time.Second

// cutoffForLag is how long a master cut off from its replicas may still
// accept writes: maxLag + 2 s, one second more than the rule
// lock.WithFailoverQuarantine states (maxLag + 1 s), which is short.
// Redis counts a replica good while its lag, in whole seconds of its
// cached clock (now - last REPLCONF ACK), is at most maxLag: up to
// maxLag + 1 s after its last ACK; and the master recounts only in its
// once-a-second replicationCron, up to 1 s later still. Partitioned right
// after an ACK early in a wall-clock second, a master was measured
// accepting writes for 2.42 s with maxLag 1 s.
const cutoffForLag = maxLag + 2*time.Second

// partitionAfterAck partitions relays right after master's replicas
// acknowledged a fresh write (WAIT asks them at once), just after a
// wall-clock second began: their last ACK then counts as long as Redis
// lets it, the worst case for how long master accepts writes.
func partitionAfterAck(ctx context.Context, t *testing.T, master *redistest.Server, relays []*relay) int64 {
	t.Helper()
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 5*time.Millisecond).Sub(now))
	syncReplicas(ctx, t, master, len(relays))
	cut := Mono()
	for _, r := range relays {
		r.Partition()
	}
	return cut
}

// guard sets min-replicas-to-write to n and min-replicas-max-lag to maxLag
// on master, as the operator manages them.
func guard(ctx context.Context, t *testing.T, master *redistest.Server, n int) {
	t.Helper()
	c := master.Client(t)
	for k, v := range map[string]string{"min-replicas-to-write": strconv.Itoa(n), "min-replicas-max-lag": strconv.Itoa(int(maxLag.Seconds()))} {
		if err := c.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Split brain: the old master is partitioned from both its replicas (each
// replicates through a fault proxy that swallows both directions but keeps
// the connections open) while its holder still reaches it, and takes the
// holder's renewals until min-replicas-max-lag (min-replicas-to-write 2,
// the number of replicas) makes it refuse writes. The partition comes
// right after the replicas' last ACK (partitionAfterAck), and a replica is
// promoted at once: the contenders take the key there. Without the
// quarantine they get it as soon as the key's replicated TTL runs out
// there, while the holder's renewals still succeed on the old master. With
// it (cutoffForLag) the promoted replica grants nothing until the holder's
// last renewal on the old master has run out.
func TestQuarantineSplitBrainUntilMinReplicasMaxLag(t *testing.T) {
	variants(t, "quarantine", "no quarantine", time.Minute, func(t *testing.T, s *scenario) {
		q := &quarantineRun{s: s, key: "job", ttl: time.Second, cutoff: cutoffForLag}
		g := redistest.StartReplicated(t, 2)
		relays := make([]*relay, len(g.Replicas))
		for i, r := range g.Replicas {
			relays[i] = replicateThrough(s.ctx, t, r, g.Master, len(g.Replicas))
		}
		guard(s.ctx, t, g.Master, len(g.Replicas))
		q.warmUp(g.Master, len(g.Replicas))
		h := q.holder(g.Master.Addr(), "holder", 0)
		probe := writeProbe(s.ctx, t, g.Master)
		cut := partitionAfterAck(s.ctx, t, g.Master, relays)
		if err := g.Replicas[0].Promote(s.ctx); err != nil {
			t.Fatal(err)
		}
		firsts := q.contend(g.Replicas[0].Addr(), 2, q.length()+time.Second)
		accepted := time.Duration(probe() - cut)
		c := q.holderClaim(h)
		t.Logf("the old master accepted writes for %v after the partition; the holder's lease ended %v after it",
			accepted.Round(time.Millisecond), time.Duration(c.Until-cut).Round(time.Millisecond))
		if accepted > maxLag+time.Second {
			t.Logf("that is more than maxLag + 1 s, the cutoff lock.WithFailoverQuarantine's doc states (see cutoffForLag)")
		}
		if accepted >= q.cutoff {
			t.Errorf("the old master accepted writes for %v after the partition, not less than the cutoff %v", accepted, q.cutoff)
		}
		q.checkWaits(firsts)
		q.verdict("holder", "")
	})
}

// The partition that leaves the old master one of its two replicas, with
// min-replicas-to-write 1: {old master, replica 0} | {replica 1, promoted}.
// The old master keeps a good replica, so it takes the holder's renewals
// for as long as the partition lasts; no cutoff bounds that, and the
// quarantine on the promoted replica ends while the holder still holds.
// UNSAFE with the quarantine as without: S1 must find two holders in both.
// This is why the operator requires min-replicas-to-write equal to the
// number of replicas where the quarantine is on.
func TestQuarantineUnsafeWhenOldMasterKeepsAReplica(t *testing.T) {
	variants(t, "quarantine", "no quarantine", time.Minute, func(t *testing.T, s *scenario) {
		q := &quarantineRun{s: s, key: "job", ttl: time.Second, cutoff: cutoffForLag}
		g := redistest.StartReplicated(t, 2)
		r := replicateThrough(s.ctx, t, g.Replicas[1], g.Master, len(g.Replicas))
		guard(s.ctx, t, g.Master, 1)
		q.warmUp(g.Master, len(g.Replicas))
		h := q.holder(g.Master.Addr(), "holder", q.length()+2*time.Second)
		probe := writeProbe(s.ctx, t, g.Master)
		cut := Mono()
		r.Partition()
		if err := g.Replicas[1].Promote(s.ctx); err != nil {
			t.Fatal(err)
		}
		firsts := q.contend(g.Replicas[1].Addr(), 2, q.length()+time.Second)
		accepted := time.Duration(probe() - cut)
		q.holderClaim(h)
		t.Logf("the old master accepted writes for %v after the partition (the whole run)", accepted.Round(time.Millisecond))
		if accepted < q.length() {
			t.Errorf("the old master stopped accepting writes %v after the partition: the scenario did not keep its replica", accepted)
		}
		q.checkWaits(firsts)
		s.checkDocumented("S1", Overlaps(s.h.Claims()), true,
			"the old master keeps min-replicas-to-write with the replica on its side and renews past any quarantine")
	})
}

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
// accept writes: maxLag + 2 s, the rule lock.WithFailoverQuarantine
// states and the operator publishes. Redis counts a replica good while its lag, in whole seconds of its
// cached clock (now - last REPLCONF ACK), is at most maxLag: up to
// maxLag + 1 s after its last ACK; and the master recounts only in its
// once-a-second replicationCron, up to 1 s later still. In the worst case
// (startLateInASecond, partitionAfterAck) a master was measured accepting
// writes for 2.87-2.89 s with maxLag 1 s;
// TestQuarantineSplitBrainUntilMinReplicasMaxLag shows two holders with
// one second less.
const cutoffForLag = maxLag + 2*time.Second

// startLateInASecond waits until 850 ms into a wall-clock second, so that
// a server started next runs its once-a-second replicationCron late in
// each second (its first serverCron runs as it starts).
func startLateInASecond() {
	now := time.Now()
	at := now.Truncate(time.Second).Add(850 * time.Millisecond)
	if at.Before(now) {
		at = at.Add(time.Second)
	}
	time.Sleep(at.Sub(now))
}

// partitionAfterAck partitions relays right after master's replicas
// acknowledged a fresh write (WAIT asks them at once), just after a
// wall-clock second began. With a master started by startLateInASecond,
// that is the worst case: the last ACK counts for maxLag + 1 s of whole
// seconds, and the recount that drops it comes almost a second later.
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
// replicates through a relay that drops both directions but keeps the
// connections open) while its holder still reaches it, and takes the
// holder's renewals (every 100 ms) until min-replicas-max-lag
// (min-replicas-to-write 2, the number of replicas) makes it refuse
// writes. The timing is the worst case (startLateInASecond,
// partitionAfterAck), and a replica is promoted at once: the contenders
// take the key there. Without the quarantine they get it as soon as the
// key's replicated TTL runs out there, while the holder's renewals still
// succeed on the old master. With it (cutoffForLag) the promoted replica
// grants nothing until the holder's last renewal on the old master has run
// out. With a cutoff of maxLag + 1 s (the rule counting only the once-a-
// second recount, not the whole-second lag) the quarantine ends while the
// holder still holds: two holders, asserted (the quarantine variant only;
// its naive variant is the first case's).
func TestQuarantineSplitBrainUntilMinReplicasMaxLag(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cutoff time.Duration
		unsafe string
	}{
		{name: "cutoff maxLag + 2 s", cutoff: cutoffForLag},
		{name: "cutoff maxLag + 1 s, one second short", cutoff: maxLag + time.Second,
			unsafe: "the old master took renewals for more than maxLag + 1 s after the partition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, s *scenario) { splitBrain(t, s, tc.cutoff, tc.unsafe) }
			if tc.unsafe != "" {
				run(t, newScenario(t, time.Minute, false))
				return
			}
			variants(t, "quarantine", "no quarantine", time.Minute, run)
		})
	}
}

func splitBrain(t *testing.T, s *scenario, cutoff time.Duration, unsafe string) {
	q := &quarantineRun{s: s, key: "job", ttl: time.Second, cutoff: cutoff, holderRenew: 100 * time.Millisecond}
	startLateInASecond()
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
	if accepted >= cutoffForLag {
		t.Errorf("the old master accepted writes for %v after the partition, not less than maxLag + 2 s", accepted)
	}
	q.checkWaits(firsts)
	q.verdict("holder", unsafe)
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
	s := newScenario(t, time.Minute, false) // without the quarantine, it is the split brain's naive variant
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
}

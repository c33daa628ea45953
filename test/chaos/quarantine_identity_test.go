package chaos

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// noReplid2 is master_replid2 when a master has no previous replication ID.
var noReplid2 = strings.Repeat("0", 40)

// replication reads srv's run ID and replication IDs.
func replication(ctx context.Context, t *testing.T, srv *redistest.Server) (run, replid, replid2 string) {
	t.Helper()
	info, err := srv.Info(ctx, "server", "replication")
	if err != nil {
		t.Fatal(err)
	}
	return info["run_id"], info["master_replid"], info["master_replid2"]
}

// A master that was never failed over takes a new replication ID when it
// creates its replication backlog (its first replica attaches) and when it
// frees it (no replica for repl-backlog-ttl), clearing replid2 both times.
// lua/epoch.lua reads that as no failover: acquisitions go on at once.
func TestQuarantineNotForBacklogChanges(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	srv := redistest.StartStandalone(t)
	l := newLocker(t, srv.Client(t), lock.WithTTL(time.Second), lock.WithFailoverQuarantine(cutoffForLag, lock.MissingEpochIsNew))
	take := func(when string) {
		t.Helper()
		start := time.Now()
		lease, err := l.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		t.Logf("%s: acquired in %v", when, time.Since(start).Round(100*time.Microsecond))
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	changed := func(run, replid string) string {
		t.Helper()
		r, id, id2 := replication(ctx, t, srv)
		if r != run || id == replid || id2 != noReplid2 {
			t.Fatalf("run ID %s→%s, replication ID %s→%s, replid2 %s: not the change under test", run, r, replid, id, id2)
		}
		return id
	}
	take("before any replica")
	run, replid, _ := replication(ctx, t, srv)

	replica := redistest.StartStandalone(t)
	if err := replica.Client(t).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(srv.Port())).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the first replica", func() bool { return onlineReplicas(ctx, srv) == 1 })
	replid = changed(run, replid)
	take("after the backlog was created")

	if err := srv.Client(t).ConfigSet(ctx, "repl-backlog-ttl", "1").Err(); err != nil {
		t.Fatal(err)
	}
	replica.Kill()
	waitFor(t, 15*time.Second, "the backlog freed", func() bool {
		info, err := srv.Info(ctx, "replication")
		return err == nil && info["repl_backlog_active"] == "0"
	})
	changed(run, replid)
	take("after the backlog was freed")
}

// A failover and back, A→B→A, that loses B's grant: A hands over to B
// cleanly (nothing granted on B reaches A), A falls behind (SIGSTOP, its
// link killed), the holder takes the key on B, B dies and A is promoted
// again. A's run ID is the one in the epoch record A has — a check of run
// IDs alone would grant at once — but its replication ID changed with a
// replid2 set (a promotion): with the quarantine nothing is granted until
// the holder's lease ended; without, contenders take the key at once.
func TestQuarantineFailoverAndBack(t *testing.T) {
	variants(t, "quarantine", "no quarantine", time.Minute, func(t *testing.T, s *scenario) {
		q := &quarantineRun{s: s, key: "job", ttl: time.Second, cutoff: 500 * time.Millisecond}
		g := redistest.StartReplicated(t, 1)
		a, b := g.Master, g.Replicas[0]
		q.warmUp(a, 1)
		runA, _, _ := replication(s.ctx, t, a)

		if err := b.Promote(s.ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Client(t).ReplicaOf(s.ctx, "127.0.0.1", strconv.Itoa(b.Port())).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "A replicating B", func() bool { return onlineReplicas(s.ctx, b) == 1 })
		a.Pause()
		if err := b.Client(t).ClientKillByFilter(s.ctx, "TYPE", "replica").Err(); err != nil {
			t.Fatal(err)
		}
		// With the quarantine the holder first waits one out: B is not
		// the server the record names.
		h := q.holder(b.Addr(), "holder", 0)
		b.Kill()
		a.Resume()
		if err := a.Promote(s.ctx); err != nil {
			t.Fatal(err)
		}
		if run, _, id2 := replication(s.ctx, t, a); run != runA || id2 == noReplid2 {
			t.Fatalf("A back as master with run ID %s (was %s), replid2 %s: not the case under test", run, runA, id2)
		}
		firsts := q.contend(a.Addr(), 2, q.length()+time.Second)
		q.holderClaim(h)
		q.checkWaits(firsts)
		q.verdict("holder", "")
	})
}

// A Sentinel failover (SENTINEL FAILOVER) under a held lease, every client
// following Sentinel: the holder's key reached the replica, so its
// renewals go on on the new master and its lease is not disturbed, while
// the first acquisition on the new master, whose run ID is not the
// record's, starts the quarantine and the contender waits it out, even
// though the holder released meanwhile (a release during a quarantine
// hands the key to nobody).
func TestQuarantineSentinelFailoverKeepsASurvivingLease(t *testing.T) {
	s := newScenario(t, time.Minute, false)
	// A TTL longer than the failover takes, so that the key on the new
	// master outlives the renewals lost in the switch.
	q := &quarantineRun{s: s, key: "job", ttl: 3 * time.Second, cutoff: 500 * time.Millisecond}
	g := redistest.StartSentinel(t, 1)
	q.warmUp(g.Master, 1)
	follower := func(id string) *lock.Locker {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs(),
			ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return newLocker(t, c, q.options(id)...)
	}
	holder, contender := follower("holder"), follower("contender")
	lease, err := holder.TryAcquire(s.ctx, q.key)
	if err != nil {
		t.Fatal(err)
	}
	from := Mono()
	syncReplicas(s.ctx, t, g.Master, 1)
	start := time.Now()
	newMaster, err := g.Failover(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s in %v", newMaster, time.Since(start).Round(time.Millisecond))
	var left time.Duration
	var sent time.Time
	waitFor(t, 20*time.Second, "the contender reaching the new master", func() bool {
		sent = time.Now()
		_, err := contender.TryAcquire(s.ctx, q.key)
		var na *lock.NotAcquiredError
		if errors.As(err, &na) && na.Quarantine > 0 {
			left = na.Quarantine
			return true
		}
		return false
	})
	time.Sleep(left / 2)
	if err := lease.Err(); err != nil {
		t.Fatalf("the surviving lease was disturbed: %v", err)
	}
	if err := s.release("holder", lease, from); err != nil {
		t.Fatalf("the holder's release on the new master: %v", err)
	}
	won, err := contender.Acquire(s.ctx, q.key)
	if err != nil {
		t.Fatal(err)
	}
	s.holdFor("contender", won, 20*time.Millisecond)
	q.checkWaits([]event{{Quarantine: left, Waited: time.Since(sent)}})
	expectClean(t, "S1", Overlaps(s.h.Claims()))
}

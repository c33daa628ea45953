package chaos

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/redistest"
)

// The failover quarantine (issue 30, lua/epoch.lua): each scenario runs
// with lock.WithFailoverQuarantine and without it (the naive variant:
// redlease as it was). A holder and two contenders are separate processes
// with their own Lockers; S1 must find two holders without the quarantine
// and none with it, and the contenders' first acquisition after the fault
// must wait the quarantine's length and no longer (checkWaits).

// An asynchronous failover that loses a held key: the replica is cut off
// (SIGSTOP, its link killed) before the holder takes the key on the
// master, the master dies (SIGKILL) and the replica is promoted without
// the key. Without the quarantine the contenders take the key there at
// once while the holder still believes. With it, the promoted replica
// names another server than the key's epoch record (run ID) — or, in the
// second case, has no record at all, which MissingEpochWaits reads as one
// lost with its key — and grants nothing until the holder's lease has
// ended on its own clock.
//
// The naive variant, redlease without quarantine, runs once: it is the
// same in every case. Two more cases show the quarantine's limits: two
// holders follow with it as without. With
// lock.MissingEpochIsNew, as it documents, a record lost with its key
// reads as a new key's. And a holder with a longer TTL than the key's
// other clients (4 s, theirs 1 s) whose grant is lost: the promoted
// replica's record knows only the longest TTL it received, so the
// quarantine (1 s + cutoff + 2 %) ends while the holder's lease runs. The
// quarantine holds only if every client of a key uses the same TTL (or
// the record learns the longest before a grant can be lost, as the
// controller's record, written ahead of first use with the lock's TTL).
func TestQuarantineAsyncFailoverLosesHeldKey(t *testing.T) {
	for _, tc := range []struct {
		name         string
		record       bool // the epoch record reached the replica before the fault
		missingIsNew bool
		holderTTL    time.Duration // the holder's TTL when longer than the others' 2 s
		unsafe       string        // the unsafe outcome asserted, if any
		naiveToo     bool          // run the naive variant too (the same for every case)
	}{
		{name: "record replicated", record: true, naiveToo: true},
		{name: "record lost with the key", record: false},
		{name: "record lost, MissingEpochIsNew", record: false, missingIsNew: true,
			unsafe: "MissingEpochIsNew: a record lost with its key reads as a new key's, and nothing is quarantined"},
		{name: "longer TTL lost with the grant", record: true, holderTTL: 5 * time.Second,
			unsafe: "the longest TTL granted was lost with the grant: the quarantine lasts the others' TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, s *scenario) {
				q := &quarantineRun{s: s, key: "job", ttl: 2 * time.Second, cutoff: 500 * time.Millisecond, missingIsNew: tc.missingIsNew, holderTTL: tc.holderTTL}
				g := redistest.StartReplicated(t, 1)
				if tc.record {
					q.warmUp(g.Master, 1)
				}
				g.Replicas[0].Pause()
				if err := g.Master.Client(t).ClientKillByFilter(s.ctx, "TYPE", "replica").Err(); err != nil {
					t.Fatal(err)
				}
				h := q.holder(g.Master.Addr(), "holder", 0)
				g.Master.Kill()
				g.Replicas[0].Resume()
				if err := g.Replicas[0].Promote(s.ctx); err != nil {
					t.Fatal(err)
				}
				firsts := q.contend(g.Replicas[0].Addr(), 2, q.length()+time.Second)
				q.holderClaim(h)
				if tc.unsafe == "" {
					q.checkWaits(firsts)
				}
				q.verdict("holder", tc.unsafe)
			}
			if !tc.naiveToo {
				run(t, newScenario(t, time.Minute, false))
				return
			}
			variants(t, "quarantine", "no quarantine", time.Minute, run)
		})
	}
}

// A restart that loses writes: the server's RDB was saved before the
// holder's grant (SAVE after a first grant and release, so the epoch
// record is in it), the server is SIGKILLed and restarts from that older
// RDB, without the key. The holder, cut off by a fault proxy, goes on
// believing until its deadline. The restarted server has a new run ID:
// with the quarantine (cutoff 0, a standalone server) it grants nothing
// for the TTL plus 2 %; without, contenders take the key at once.
func TestQuarantineRestartFromOlderRDB(t *testing.T) {
	variants(t, "quarantine", "no quarantine", time.Minute, func(t *testing.T, s *scenario) {
		q := &quarantineRun{s: s, key: "job", ttl: 2 * time.Second}
		srv := redistest.StartStandalone(t)
		q.warmUp(srv, 0)
		admin := srv.Client(t)
		if err := admin.Save(s.ctx).Err(); err != nil {
			t.Fatal(err)
		}
		before, err := srv.Info(s.ctx, "server")
		if err != nil {
			t.Fatal(err)
		}
		proxy := faultproxy.New(t, srv.Addr())
		h := q.holder(proxy.Addr(), "holder", 0)
		proxy.BlackHole()
		srv.Kill()
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		after, err := srv.Info(s.ctx, "server")
		if err != nil {
			t.Fatal(err)
		}
		if after["run_id"] == before["run_id"] {
			t.Fatal("the restarted server kept its run ID")
		}
		if n := admin.Exists(s.ctx, "job").Val(); n != 0 {
			t.Fatal("the key survived the restart: the RDB was not older than the grant")
		}
		firsts := q.contend(srv.Addr(), 2, q.length()+time.Second)
		q.holderClaim(h)
		q.checkWaits(firsts)
		q.verdict("holder", "")
	})
}

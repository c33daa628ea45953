package chaos

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// quarantineRun is one run of a failover-quarantine scenario: a lock key
// with its TTL, taken by helper processes with the quarantine (cutoff) or,
// in the naive variant, without it.
type quarantineRun struct {
	s      *scenario
	key    string
	ttl    time.Duration
	cutoff time.Duration
	// missingIsNew reads a missing epoch record as a new key's
	// (MissingEpochIsNew) instead of as a loss.
	missingIsNew bool
	// holderTTL, when set, is the holder's TTL instead of ttl.
	holderTTL time.Duration
	// holderRenew, when set, is the holder's renewal interval.
	holderRenew time.Duration
}

// length is the quarantine lua/epoch.lua imposes after a failover.
func (q *quarantineRun) length() time.Duration {
	return protocol.Quarantine{On: true, Cutoff: q.cutoff}.Length(q.ttl)
}

// options are a Locker's in this run, for the test's own clients.
func (q *quarantineRun) options(id string) []lock.Option {
	opts := []lock.Option{lock.WithTTL(q.ttl), lock.WithIdentity(id), lock.WithRetryBackoff(time.Millisecond, 20*time.Millisecond)}
	if !q.s.naive {
		missing := lock.MissingEpochWaits
		if q.missingIsNew {
			missing = lock.MissingEpochIsNew
		}
		opts = append(opts, lock.WithFailoverQuarantine(q.cutoff, missing))
	}
	return opts
}

// env is a helper's environment: its server, identity and this run's lock.
func (q *quarantineRun) env(addr, id string, extra map[string]string) map[string]string {
	env := map[string]string{"REDIS": addr, "KEY": q.key, "TTL": q.ttl.String(), "ID": id}
	if !q.s.naive {
		env["CUTOFF"] = q.cutoff.String()
	}
	if q.missingIsNew {
		env["MISSING"] = "new"
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// warmUp takes and releases the key once on srv, so that its epoch record
// names srv, and waits until replicas replicas have it. It reads the
// missing record as a new key's (MissingEpochIsNew), as the controller
// does when it writes a declared lock's first record.
func (q *quarantineRun) warmUp(srv *redistest.Server, replicas int) {
	q.s.t.Helper()
	opts := q.options("warm-up")
	if !q.s.naive {
		opts = append(opts, lock.WithFailoverQuarantine(q.cutoff, lock.MissingEpochIsNew))
	}
	l := newLocker(q.s.t, srv.Client(q.s.t), opts...)
	lease, err := l.TryAcquire(q.s.ctx, q.key)
	if err != nil {
		q.s.t.Fatalf("warm-up on %s: %v", srv, err)
	}
	if err := lease.Release(q.s.ctx); err != nil {
		q.s.t.Fatalf("warm-up release on %s: %v", srv, err)
	}
	syncReplicas(q.s.ctx, q.s.t, srv, replicas)
}

// holder starts a holder process on addr (hold: how long before it
// releases; 0 until its lease ends) and waits until it holds the key.
func (q *quarantineRun) holder(addr, id string, hold time.Duration) *helper {
	q.s.t.Helper()
	extra := map[string]string{}
	if hold > 0 {
		extra["HOLD"] = hold.String()
	}
	if q.holderTTL > 0 {
		extra["TTL"] = q.holderTTL.String()
	}
	if q.holderRenew > 0 {
		extra["RENEW"] = q.holderRenew.String()
	}
	h := startHelper(q.s.t, "quarantine-holder", q.env(addr, id, extra))
	h.next(q.s.t, "holding", 90*time.Second)
	return h
}

// holderClaim waits for h's final claim and records it.
func (q *quarantineRun) holderClaim(h *helper) Claim {
	q.s.t.Helper()
	c := *h.next(q.s.t, "claim", 30*time.Second).Claim
	q.s.h.Claim(c)
	return c
}

// contend runs n contender processes on addr for run, records their
// claims, and returns each one's "first" report.
func (q *quarantineRun) contend(addr string, n int, run time.Duration) []event {
	q.s.t.Helper()
	hs := make([]*helper, n)
	for i := range hs {
		hs[i] = startHelper(q.s.t, "quarantine-contender", q.env(addr, "contender-"+strconv.Itoa(i), map[string]string{"FOR": run.String()}))
	}
	var mu sync.Mutex
	var firsts []event
	var wg sync.WaitGroup
	deadline := time.After(run + 30*time.Second)
	for _, h := range hs {
		wg.Go(func() {
			for {
				select {
				case e, ok := <-h.events:
					switch {
					case !ok || e.Kind == "done":
						return
					case e.Kind == "claim":
						q.s.h.Claim(*e.Claim)
					case e.Kind == "first":
						mu.Lock()
						firsts = append(firsts, e)
						mu.Unlock()
					case e.Kind == "error":
						q.s.t.Errorf("contender: %s", e.Error)
					}
				case <-deadline:
					q.s.t.Errorf("a contender did not finish within %v", run+30*time.Second)
					return
				}
			}
		})
	}
	wg.Wait()
	return firsts
}

// checkWaits asserts what the contenders' first acquisitions after the
// fault measured: with the quarantine, the server reported one of the
// rule's length to the first of them, and each waited what it was told
// (on the server's clock, to the millisecond) and less than 2 s more.
// The naive variant's are only logged.
func (q *quarantineRun) checkWaits(firsts []event) {
	t := q.s.t
	t.Helper()
	want := q.length()
	var longest time.Duration
	for _, f := range firsts {
		t.Logf("first acquisition after the fault: waited %v, quarantine reported %v (rule: TTL %v + cutoff %v + 2 %% = %v)",
			f.Waited.Round(time.Millisecond), f.Quarantine, q.ttl, q.cutoff, want)
		longest = max(longest, f.Quarantine)
		if q.s.naive {
			continue
		}
		switch {
		case f.Quarantine > want:
			t.Errorf("quarantine reported %v, longer than the rule's %v", f.Quarantine, want)
		case f.Waited < f.Quarantine-2*time.Millisecond:
			t.Errorf("acquired after %v, before the reported quarantine of %v ended", f.Waited, f.Quarantine)
		case f.Waited >= want+2*time.Second:
			t.Errorf("acquired after %v, 2 s or more past the quarantine of %v", f.Waited, want)
		}
	}
	if !q.s.naive && (len(firsts) == 0 || longest < want-20*time.Millisecond) {
		t.Errorf("no contender was told the whole quarantine (%v): longest reported %v of %d", want, longest, len(firsts))
	}
}

// verdict checks S1 over every claim (the naive variant must be caught;
// where unsafe names a limit of the quarantine, both must be) and that
// fences handed out by the server the contenders used increase.
func (q *quarantineRun) verdict(holder, unsafe string) {
	q.s.t.Helper()
	if unsafe != "" {
		q.s.checkDocumented("S1", Overlaps(q.s.h.Claims()), true, unsafe)
	} else {
		q.s.check("S1", Overlaps(q.s.h.Claims()))
	}
	var contenders []Claim
	for _, c := range q.s.h.Claims() {
		if c.Client != holder {
			contenders = append(contenders, c)
		}
	}
	if len(contenders) == 0 {
		q.s.t.Error("no contender acquired the lock after the fault")
	}
	expectClean(q.s.t, "fences", FencesNotIncreasing(contenders))
}

// syncReplicas waits until n replicas acknowledge a write made on srv
// after everything before it (WAIT on the writing connection).
func syncReplicas(ctx context.Context, t *testing.T, srv *redistest.Server, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	c := srv.Client(t, func(o *redis.Options) { o.PoolSize = 1 })
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "chaos:sync", "1", time.Second)
		wait = p.Do(ctx, "wait", n, 5000)
		return nil
	}); err != nil {
		t.Fatalf("%s: WAIT: %v", srv, err)
	}
	if acked, _ := wait.Int(); acked < n {
		t.Fatalf("%s: %d of %d replicas acknowledged", srv, acked, n)
	}
}

// replicateThrough makes replica replicate master through a relay, and
// waits until master counts replicas online replicas again.
func replicateThrough(ctx context.Context, t *testing.T, replica, master *redistest.Server, replicas int) *relay {
	t.Helper()
	r := newRelay(t, master.Addr())
	_, port, _ := strings.Cut(r.Addr(), ":")
	if err := replica.Client(t).ReplicaOf(ctx, "127.0.0.1", port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, replica.String()+" replicating through a relay", func() bool {
		info, err := replica.Info(ctx, "replication")
		return err == nil && info["master_port"] == port && info["master_link_status"] == "up" && onlineReplicas(ctx, master) == replicas
	})
	return r
}

// onlineReplicas counts the replicas master reports online.
func onlineReplicas(ctx context.Context, master *redistest.Server) int {
	info, err := master.Info(ctx, "replication")
	if err != nil {
		return -1
	}
	n := 0
	for i := range 8 {
		if strings.Contains(info["slave"+strconv.Itoa(i)], "state=online") {
			n++
		}
	}
	return n
}

// writeProbe writes to srv every 20 ms from now on and returns, when
// stopped, when srv last accepted a write (CLOCK_MONOTONIC ns).
func writeProbe(ctx context.Context, t *testing.T, srv *redistest.Server) (stop func() int64) {
	c := srv.Client(t, func(o *redis.Options) { o.MaxRetries = -1; o.ReadTimeout = 200 * time.Millisecond })
	var last int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if c.Set(ctx, "chaos:probe", "1", time.Second).Err() == nil {
				last = Mono()
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return last
	}
}

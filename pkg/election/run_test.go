package election_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/lock"
)

func noop(context.Context, uint64) {}

func TestValidate(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	valid := func() election.Config {
		return election.Config{
			Client:    client,
			Key:       "k",
			Identity:  "me",
			TTL:       time.Second,
			Callbacks: election.Callbacks{OnStartedLeading: noop},
		}
	}
	tests := []struct {
		name   string
		change func(*election.Config)
		want   string // substring of the error; "" means valid
	}{
		{"valid", func(*election.Config) {}, ""},
		{"defaults", func(c *election.Config) { c.Identity, c.TTL, c.RenewInterval = "", 0, 0 }, ""},
		{"explicit renew interval", func(c *election.Config) { c.RenewInterval = 450 * time.Millisecond }, ""},
		{"renew interval leaving no room for a renewal", func(c *election.Config) { c.RenewInterval = 900 * time.Millisecond }, "no room for a renewal"},
		{"nil client", func(c *election.Config) { c.Client = nil }, "nil Client"},
		{"empty key", func(c *election.Config) { c.Key = "" }, "empty key"},
		{"key with whitespace", func(c *election.Config) { c.Key = "a b" }, "whitespace"},
		{"key too long", func(c *election.Config) { c.Key = strings.Repeat("k", lock.MaxKeyLength+1) }, "more than"},
		{"identity with whitespace", func(c *election.Config) { c.Identity = "me\t2" }, "whitespace"},
		{"identity too long", func(c *election.Config) { c.Identity = strings.Repeat("i", 254) }, "more than 253"},
		{"negative TTL", func(c *election.Config) { c.TTL = -time.Second }, "TTL -1s is negative"},
		{"TTL below the lock's minimum", func(c *election.Config) { c.TTL = time.Millisecond }, "below"},
		{"negative renew interval", func(c *election.Config) { c.RenewInterval = -1 }, "negative"},
		{"renew interval equals TTL", func(c *election.Config) { c.RenewInterval = time.Second }, "shorter than TTL"},
		{"renew interval above TTL", func(c *election.Config) { c.RenewInterval = 2 * time.Second }, "shorter than TTL"},
		{"default TTL, renew interval above it", func(c *election.Config) { c.TTL, c.RenewInterval = 0, time.Minute }, "shorter than TTL 15s"},
		{"no OnStartedLeading", func(c *election.Config) { c.Callbacks.OnStartedLeading = nil }, "OnStartedLeading"},
		{"bad lock option", func(c *election.Config) { c.LockOptions = []lock.Option{lock.WithDriftFactor(0.9)} }, "drift factor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, lock.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "election: ") {
				t.Fatalf("Validate = %v, want an error matching lock.ErrInvalidConfig, prefixed \"election: \", containing %q", err, tc.want)
			}
			// Run refuses it the same way, before any I/O.
			if rerr := election.Run(context.Background(), cfg); rerr == nil || rerr.Error() != err.Error() {
				t.Fatalf("Run = %v, want %v", rerr, err)
			}
		})
	}
}

// TestOneLeaderAtATime runs three candidates on separate connections and
// hands leadership around six times by cancelling the leader, alternately
// with and without ReleaseOnCancel. At no moment do two OnStartedLeading
// callbacks run at once, fences grow with every leadership, and every
// OnStartedLeading is followed by exactly one OnStoppedLeading.
func TestOneLeaderAtATime(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const (
		key    = "one-leader"
		ttl    = 600 * time.Millisecond
		rounds = 6
	)
	var (
		concurrent, maxConcurrent, started, stopped atomic.Int32
		mu                                          sync.Mutex
		lastFence                                   uint64
		leaders                                     = make(chan leadership, rounds+3)
		releases                                    [2]int // rounds without, with ReleaseOnCancel
	)
	config := func(id string, client *redis.Client, release bool) election.Config {
		var inCallback atomic.Bool
		return election.Config{
			Client: client, Key: key, Identity: id, TTL: ttl, ReleaseOnCancel: release,
			Callbacks: election.Callbacks{
				OnStartedLeading: func(ctx context.Context, fence uint64) {
					inCallback.Store(true)
					defer inCallback.Store(false)
					started.Add(1)
					n := concurrent.Add(1)
					defer concurrent.Add(-1)
					for m := maxConcurrent.Load(); n > m; m = maxConcurrent.Load() {
						if maxConcurrent.CompareAndSwap(m, n) {
							break
						}
					}
					mu.Lock()
					if fence <= lastFence {
						t.Errorf("%s leads with fence %d, not above the previous leader's %d", id, fence, lastFence)
					}
					lastFence = fence
					mu.Unlock()
					leaders <- leadership{id: id, fence: fence, at: time.Now()}
					<-ctx.Done()
				},
				OnStoppedLeading: func() {
					if inCallback.Load() {
						t.Errorf("%s: OnStoppedLeading ran before OnStartedLeading returned", id)
					}
					stopped.Add(1)
				},
			},
		}
	}
	type cand struct {
		client  *redis.Client
		release bool
		r       *runner
	}
	cands := map[string]*cand{}
	for i, id := range []string{"a", "b", "c"} {
		c := &cand{client: srv.Client(t), release: i != 1}
		c.r = start(t, config(id, c.client, c.release))
		cands[id] = c
	}
	for range rounds {
		l := recv(t, leaders, 3*ttl, "a new leadership")
		time.Sleep(50 * time.Millisecond) // the others wait meanwhile
		c := cands[l.id]
		if c.release {
			releases[1]++
		} else {
			releases[0]++
		}
		if err := c.r.stop(t); err != nil {
			t.Fatalf("%s: Run after cancel = %v, want nil", l.id, err)
		}
		c.release = !c.release
		c.r = start(t, config(l.id, c.client, c.release))
	}
	recv(t, leaders, 3*ttl, "the last leadership")
	for _, c := range cands {
		if err := c.r.stop(t); err != nil {
			t.Errorf("Run = %v", err)
		}
	}
	if m := maxConcurrent.Load(); m != 1 {
		t.Errorf("at most %d leaders at once, want 1", m)
	}
	if started.Load() != stopped.Load() {
		t.Errorf("OnStartedLeading ran %d times, OnStoppedLeading %d", started.Load(), stopped.Load())
	}
	if releases[0] == 0 || releases[1] == 0 {
		t.Errorf("hand-overs without/with ReleaseOnCancel: %v, want both", releases)
	}
	t.Logf("%d leaderships; hand-overs without/with ReleaseOnCancel: %v", started.Load(), releases)
}

// TestReleaseOnCancelHandover measures, over 20 hand-overs between two
// candidates, the time from cancelling the leader's context to the other's
// OnStartedLeading: a release and one acquisition, a few round trips.
func TestReleaseOnCancelHandover(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const (
		key   = "handover"
		runs  = 20
		bound = 250 * time.Millisecond
	)
	leaders := make(chan leadership, 4)
	clients := map[string]*redis.Client{"a": srv.Client(t), "b": srv.Client(t)}
	config := func(id string) election.Config {
		return election.Config{
			Client: clients[id], Key: key, Identity: id, TTL: 5 * time.Second, ReleaseOnCancel: true,
			Callbacks: election.Callbacks{
				OnStartedLeading: func(ctx context.Context, fence uint64) {
					leaders <- leadership{id: id, fence: fence, at: time.Now()}
					<-ctx.Done()
				},
			},
		}
	}
	runners := map[string]*runner{"a": start(t, config("a"))}
	first := recv(t, leaders, 5*time.Second, "the first leadership")
	runners["b"] = start(t, config("b"))
	prev := first
	var took []time.Duration
	for range runs {
		other := map[string]string{"a": "b", "b": "a"}[prev.id]
		// The other candidate is ready when its observer has seen the leader.
		runners[other].waitLeader(t, prev.id, 5*time.Second)
		cancelled := time.Now()
		runners[prev.id].cancel()
		next := recv(t, leaders, 5*time.Second, "the hand-over")
		d := next.at.Sub(cancelled)
		took = append(took, d)
		if next.id != other || next.fence <= prev.fence {
			t.Fatalf("leadership went from %s (fence %d) to %s (fence %d)", prev.id, prev.fence, next.id, next.fence)
		}
		if d > bound {
			t.Errorf("hand-over took %v, want under %v", d, bound)
		}
		if err := runners[prev.id].stop(t); err != nil {
			t.Fatalf("%s: Run = %v", prev.id, err)
		}
		runners[prev.id] = start(t, config(prev.id))
		prev = next
	}
	t.Logf("ReleaseOnCancel hand-over, cancel to the next OnStartedLeading: %s", summary(took))
}

// TestOnNewLeader follows every change of leader through each of its
// sources: the initial GET (a holder that is not a candidate), the PTTL
// timer (a change whose "acquired" message was never sent), "acquired"
// messages, and expiry of a leader that stopped renewing without releasing
// (as after a crash: no "released").
func TestOnNewLeader(t *testing.T) {
	srv := redistest.StartStandalone(t)
	admin := srv.Client(t)
	ctx := context.Background()
	const key, ttl = "new-leader", 500 * time.Millisecond

	ghost1, _ := protocol.NewValue("ghost-1")
	if err := admin.Set(ctx, key, ghost1, 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	leaders := make(chan leadership, 2)
	config := func(id string) election.Config {
		return election.Config{
			Client: srv.Client(t), Key: key, Identity: id, TTL: ttl,
			Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, fence uint64) {
				leaders <- leadership{id: id, fence: fence}
				<-ctx.Done()
			}},
		}
	}
	runners := map[string]*runner{"a": start(t, config("a")), "b": start(t, config("b"))}
	for _, r := range runners {
		r.waitLeader(t, "ghost-1", 2*time.Second) // initial GET
	}
	// Replace the holder silently, as if its "acquired" message was lost:
	// only the timer armed with ghost-1's PTTL can see it.
	ghost2, _ := protocol.NewValue("ghost-2")
	if err := admin.Set(ctx, key, ghost2, 600*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range runners {
		r.waitLeader(t, "ghost-2", 2*time.Second)
	}
	// ghost-2 never releases: the candidates take over when it expires.
	x := recv(t, leaders, 2*time.Second, "a leadership after ghost-2 expired")
	y := map[string]string{"a": "b", "b": "a"}[x.id]
	for _, r := range runners {
		r.waitLeader(t, x.id, 2*time.Second)
	}
	// x steps down without releasing: y sees its lease expire.
	stopped := time.Now()
	if err := runners[x.id].stop(t); err != nil {
		t.Fatalf("%s: Run = %v", x.id, err)
	}
	next := recv(t, leaders, 2*ttl+time.Second, "the leadership after x's lease expired")
	if next.id != y {
		t.Fatalf("next leader %s, want %s", next.id, y)
	}
	if d := time.Since(stopped); d > ttl+250*time.Millisecond {
		t.Errorf("took over %v after the leader stopped renewing, want within the TTL %v (+250ms)", d, ttl)
	}
	runners[y].waitLeader(t, y, 2*time.Second)

	want := map[string][]string{x.id: {"ghost-1", "ghost-2", x.id}, y: {"ghost-1", "ghost-2", x.id, y}}
	for id, r := range runners {
		if got := r.observed(); strings.Join(got, ",") != strings.Join(want[id], ",") {
			t.Errorf("%s observed leaders %q, want %q", id, got, want[id])
		}
	}
}

// TestLeaderContextEndsWithTheLease: the leader's context is cancelled as
// soon as the lease is lost (the key became someone else's) or its local
// deadline passes (Redis stopped answering, or lock.WithMaxHold given in
// LockOptions stopped the renewals), with the lease's error as the cause;
// Run then returns ErrLeadershipLost after OnStoppedLeading.
func TestLeaderContextEndsWithTheLease(t *testing.T) {
	for _, how := range []string{"key taken", "redis paused", "max hold"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			admin := srv.Client(t)
			const key, ttl = "lost", 600 * time.Millisecond
			type result struct {
				cause   error
				elapsed time.Duration
			}
			var broke atomic.Pointer[time.Time]
			leading := make(chan struct{})
			causes := make(chan result, 1)
			var callbackReturned, stoppedAfter atomic.Bool
			var opts []lock.Option
			if how == "max hold" {
				opts = append(opts, lock.WithMaxHold(ttl))
			}
			r := start(t, election.Config{
				Client: srv.Client(t), Key: key, Identity: "me", TTL: ttl,
				Logger: testr.New(t), LockOptions: opts,
				Callbacks: election.Callbacks{
					OnStartedLeading: func(ctx context.Context, _ uint64) {
						close(leading)
						<-ctx.Done()
						causes <- result{context.Cause(ctx), time.Since(*broke.Load())}
						callbackReturned.Store(true)
					},
					OnStoppedLeading: func() { stoppedAfter.Store(callbackReturned.Load()) },
				},
			})
			recv(t, leading, 2*time.Second, "leadership")
			now := time.Now()
			broke.Store(&now)
			switch how {
			case "key taken":
				other, _ := protocol.NewValue("other")
				if err := admin.Set(context.Background(), key, other, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			case "redis paused":
				srv.Pause()
				defer srv.Resume() // also when the test fails before
			case "max hold": // renewals stop extending the lease after ttl
			}
			res := recv(t, causes, 3*ttl, "the leader's context ending")
			if how == "redis paused" {
				srv.Resume()
			}
			if !errors.Is(res.cause, lock.ErrLeaseLost) {
				t.Errorf("context.Cause = %v, want lock.ErrLeaseLost", res.cause)
			}
			if how == "max hold" && !errors.Is(res.cause, lock.ErrMaxHoldExceeded) {
				t.Errorf("context.Cause = %v, want lock.ErrMaxHoldExceeded", res.cause)
			}
			// Lost at the next renewal (ttl/3), or at the local deadline: less
			// than the TTL after the last renewal was sent, so less than the
			// TTL after the pause (plus the timer's scheduling).
			if res.elapsed > ttl+100*time.Millisecond {
				t.Errorf("the leader's context ended %v after the lease broke, want within the TTL %v (+100ms)", res.elapsed, ttl)
			}
			select {
			case <-r.done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after the lease was lost")
			}
			if !errors.Is(r.err, election.ErrLeadershipLost) || !errors.Is(r.err, lock.ErrLeaseLost) {
				t.Errorf("Run = %v, want ErrLeadershipLost wrapping lock.ErrLeaseLost", r.err)
			}
			if !stoppedAfter.Load() {
				t.Error("OnStoppedLeading did not run after OnStartedLeading returned")
			}
			t.Logf("%s: leader's context ended %v after; cause: %v", how, round(res.elapsed), res.cause)
		})
	}
}

// TestRunWithoutLeading: a candidate cancelled before it leads returns nil
// without calling OnStoppedLeading; a callback that returns early does not
// end leadership.
func TestRunWithoutLeading(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const key = "early"
	leading := make(chan struct{})
	holder := start(t, election.Config{
		Client: srv.Client(t), Key: key, Identity: "holder", TTL: 300 * time.Millisecond,
		Callbacks: election.Callbacks{OnStartedLeading: func(context.Context, uint64) { close(leading) }}, // returns at once
	})
	recv(t, leading, 2*time.Second, "leadership")
	var stoppedCalls atomic.Int32
	waiter := start(t, election.Config{
		Client: srv.Client(t), Key: key, Identity: "waiter", TTL: 300 * time.Millisecond,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(context.Context, uint64) { t.Error("waiter led while the holder renews") },
			OnStoppedLeading: func() { stoppedCalls.Add(1) },
		},
	})
	waiter.waitLeader(t, "holder", 2*time.Second)
	time.Sleep(time.Second) // several TTLs: the holder keeps leading though its callback returned
	if err := waiter.stop(t); err != nil {
		t.Errorf("waiter: Run = %v, want nil", err)
	}
	if n := stoppedCalls.Load(); n != 0 {
		t.Errorf("OnStoppedLeading ran %d times for a candidate that never led", n)
	}
	if err := holder.stop(t); err != nil {
		t.Errorf("holder: Run = %v, want nil", err)
	}
}

// TestNoPolling counts the commands three candidates send while one leads
// steadily: renewals, plus about one attempt and one GET per standby per
// TTL — not a fixed-interval poll.
func TestNoPolling(t *testing.T) {
	srv := redistest.StartStandalone(t)
	admin := srv.Client(t)
	const (
		key    = "quiet"
		ttl    = 600 * time.Millisecond
		window = 1500 * time.Millisecond
	)
	leading := make(chan struct{}, 3)
	for _, id := range []string{"a", "b", "c"} {
		start(t, election.Config{
			Client: srv.Client(t), Key: key, Identity: id, TTL: ttl,
			Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, _ uint64) {
				leading <- struct{}{}
				<-ctx.Done()
			}},
		})
	}
	recv(t, leading, 2*time.Second, "leadership")
	time.Sleep(ttl) // the standbys have subscribed and looked
	ctx := context.Background()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(window)
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		calls[name] = n
	}
	// Top-level requests: scripts (renewals, attempts) and the observers'
	// MULTI/GET/PTTL/EXEC reads (GETs inside scripts count under "get").
	scripts, reads := calls["evalsha"]+calls["eval"], calls["multi"]
	// Expected: renewals window/(ttl/3) ≈ 7.5, standby attempts ≈ 2 × 3,
	// reads ≈ 3 × 3. Two standbys polling every 50ms would send 60 alone.
	limit := int(3 * 5 * window / ttl)
	t.Logf("in %v with TTL %v: %d scripts (renewals and attempts), %d reads; all calls: %v", window, ttl, scripts, reads, calls)
	if scripts+reads > limit {
		t.Errorf("%d scripts + reads in %v, want at most %d", scripts+reads, window, limit)
	}
	if len(leading) != 0 {
		t.Errorf("leadership changed during a steady window")
	}
}

// TestManyKeysOneClient runs several elections over one client (one
// connection pool), as a process with several singletons would: each key
// gets exactly one leader.
func TestManyKeysOneClient(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	const keys, perKey = 5, 3
	var mu sync.Mutex
	leads := map[string]int{}
	all := make(chan struct{}, keys*perKey)
	for k := range keys {
		key := fmt.Sprintf("many-%d", k)
		for c := range perKey {
			start(t, election.Config{
				Client: client, Key: key, Identity: fmt.Sprintf("c%d", c), TTL: time.Second,
				Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, _ uint64) {
					mu.Lock()
					leads[key]++
					mu.Unlock()
					all <- struct{}{}
					<-ctx.Done()
				}},
			})
		}
	}
	for range keys {
		recv(t, all, 2*time.Second, "a leader per key")
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for k := range keys {
		if n := leads[fmt.Sprintf("many-%d", k)]; n != 1 {
			t.Errorf("key many-%d: %d leaderships, want 1", k, n)
		}
	}
}

// A leader elected with lock.WithReplicaAck keeps leading only while its
// renewals reach the replica: once the replica is cut off, renewals fail
// with lock.ErrNotReplicated and leadership ends at the deadline the
// replica's copy allows, so a replica promoted then cannot crown a second
// leader while the first still leads. Before, renewals were not WAITed and
// the leader went on leading on the master alone.
func TestLeaderUnderReplicaAckStepsDownWhenRenewalsAreNotReplicated(t *testing.T) {
	g := redistest.StartReplicated(t, 1)
	leading := make(chan context.Context, 1)
	r := start(t, election.Config{
		Client: g.Master.Client(t), Key: "acked", Identity: "a", TTL: time.Second,
		LockOptions: []lock.Option{lock.WithReplicaAck(1, 100*time.Millisecond)},
		Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, _ uint64) {
			leading <- ctx
			<-ctx.Done()
		}},
	})
	var leaderCtx context.Context
	select {
	case leaderCtx = <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("no leader")
	}
	time.Sleep(1500 * time.Millisecond) // acknowledged renewals keep it
	if leaderCtx.Err() != nil {
		t.Fatalf("leadership ended with a healthy replica: %v", context.Cause(leaderCtx))
	}
	g.Replicas[0].Pause()
	t.Cleanup(g.Replicas[0].Resume)
	if err := g.Master.Client(t).ClientKillByFilter(t.Context(), "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	select {
	case <-leaderCtx.Done():
		// Expected within the TTL of the last acknowledged renewal.
		if d := time.Since(cutAt); d > 2*time.Second {
			t.Fatalf("leadership ended %v after the replica was cut off, past the 1 s TTL", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still leading 5 s after the replica was cut off: renewals on the master alone extended the lease")
	}
	waitDone(t, r)
	if !errors.Is(r.err, election.ErrLeadershipLost) || !errors.Is(r.err, lock.ErrLeaseLost) {
		t.Fatalf("Run = %v, want ErrLeadershipLost", r.err)
	}
}

// waitDone waits for Run to return on its own.
func waitDone(t *testing.T, r *runner) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

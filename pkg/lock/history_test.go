package lock_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// A hand-off notice that outlives its server's history (issue 39, the
// audit's case): a key is handed to a waiter W whose subscription delivers
// the notice late; the server then loses the hand-off and the increments
// before it — a restart from an older snapshot, a replica promoted without
// the last writes, a restart with an empty disk — and another client X
// takes the key on the new history. W's next attempt sees X, and its reply
// reports a counter below the old notice's (the counter went back and
// climbed again, or was never incremented: X takes the key without
// fencing after the restart-empty, where the reply reports 0). Then the
// old notice arrives.
//
// redlease: replies and notices name the counter's history (the server's
// replication ID); W compares the notice only with attempts of its own
// history, finds none, confirms first, fails (the key is X's) and waits:
// no two holders, with the quarantine or without. Protocol 5's rule,
// comparing counters whatever their history (SetHistoryBlindHandOff),
// counts W's lease from its attempt that saw X: W holds the key while X
// does, on every run.
func TestALateNoticeAcrossALostHistoryIsNotALease(t *testing.T) {
	names := map[historyLoss]string{olderSnapshot: "restart from an older snapshot",
		failoverThatLostWrites: "failover that lost the last two increments", restartEmpty: "restart with an empty disk"}
	type variant struct {
		loss       historyLoss
		quarantine bool
		blind      bool
	}
	var variants []variant
	for _, l := range []historyLoss{olderSnapshot, failoverThatLostWrites, restartEmpty} {
		variants = append(variants, variant{l, true, false}, variant{l, false, false}, variant{l, true, true})
	}
	for _, v := range variants {
		name := names[v.loss] + map[bool]string{true: ", quarantine", false: ", no quarantine"}[v.quarantine]
		if v.blind {
			name += ", naive: counters compared across histories"
		}
		t.Run(name, func(t *testing.T) {
			if v.blind {
				lock.SetHistoryBlindHandOff(t)
			}
			s := newHistoryScenario(t, v.loss, v.quarantine)
			second := s.grantTheLossTakesBack()
			w := s.queueWaiter()
			// The release hands the key to W (counter G); the notice is
			// held back.
			if err := second.Release(s.ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the notice to reach the waiter", w.heard.Load)
			s.lose()
			theirs, otherFrom := s.otherTakesTheKey()
			// Fences across the lost history (docs/protocol.md): the
			// counter went back, so X's fence repeats the one the holder's
			// second lease had before the loss, with or without the
			// quarantine.
			if v.loss != restartEmpty && theirs.Fence() != second.Fence() {
				t.Fatalf("X's fence %d after the loss, the holder's lost lease had %d: want the same fence again", theirs.Fence(), second.Fence())
			}
			// W's attempts go on. The first (held at the gate, sent before X
			// took the key) and the next (sent afterwards) see X; the old
			// notice arrives right after the second.
			w.gate.open(w.deliver)
			overlap := w.result(theirs, otherFrom)
			if overlap != v.blind {
				t.Fatalf("the waiter held the key while X did: %v, want %v", overlap, v.blind)
			}
			if !v.blind && w.confirmedFirst.Load() == 0 {
				t.Fatal("the late notice was never weighed (the scenario did not happen)")
			}
		})
	}
}

// historyLoss is how a scenario's server loses its latest writes.
type historyLoss int

const (
	olderSnapshot historyLoss = iota
	failoverThatLostWrites
	restartEmpty
)

// historyScenario is one run of TestALateNoticeAcrossALostHistoryIsNotALease:
// the server (and, for a failover, the replica the clients follow to), a
// client factory that follows, and the options every client takes.
type historyScenario struct {
	t       *testing.T
	ctx     context.Context
	loss    historyLoss
	opts    []lock.Option
	g       *redistest.Replicated
	primary *redistest.Server
	addr    atomic.Value
	admin   *redis.Client
}

const historyKey = "late-across-history"

func newHistoryScenario(t *testing.T, loss historyLoss, quarantine bool) *historyScenario {
	t.Helper()
	s := &historyScenario{t: t, ctx: ctxTimeout(t, time.Minute), loss: loss, opts: []lock.Option{lock.WithTTL(quarantineTTL)}}
	if quarantine {
		s.opts = quarantined(lock.MissingEpochWaits)
	}
	if loss == failoverThatLostWrites {
		s.g = redistest.StartReplicated(t, 1)
		s.primary = s.g.Master
		t.Cleanup(s.g.Replicas[0].Resume) // never left paused on an early failure
	} else {
		s.primary = redistest.StartStandalone(t)
	}
	s.addr.Store(s.primary.Addr())
	s.admin = s.client()
	if quarantine {
		recordEpoch(s.ctx, t, s.admin, historyKey, s.g != nil)
	}
	return s
}

// client is a client of whichever server the scenario is on now.
func (s *historyScenario) client(hooks ...redis.Hook) *redis.Client {
	c := s.primary.Client(s.t, func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.addr.Load().(string))
		}
	})
	for _, h := range hooks {
		c.AddHook(h)
	}
	return c
}

// grantTheLossTakesBack: a holder takes the key (its grant survives the
// loss: saved, or replicated), releases it and takes it again (lost), and
// returns that second lease.
func (s *historyScenario) grantTheLossTakesBack() *lock.Lease {
	t := s.t
	t.Helper()
	holder := lockerOnDoomedMaster(t, s.client(), append(s.opts, lock.WithIdentity("holder"))...)
	first, err := holder.TryAcquire(s.ctx, historyKey)
	if err != nil {
		t.Fatal(err)
	}
	switch s.loss {
	case olderSnapshot:
		if err := s.admin.Save(s.ctx).Err(); err != nil {
			t.Fatal(err)
		}
	case failoverThatLostWrites:
		if n, err := s.admin.Wait(s.ctx, 1, 5000).Result(); err != nil || n < 1 {
			t.Fatalf("WAIT 1 = %d, %v", n, err)
		}
		isolateReplica(t, s.g)
	}
	if err := first.Release(s.ctx); err != nil {
		t.Fatal(err)
	}
	second, err := holder.TryAcquire(s.ctx, historyKey)
	if err != nil {
		t.Fatal(err)
	}
	return second
}

// lose makes the server lose the latest writes, and the clients follow.
func (s *historyScenario) lose() {
	s.t.Helper()
	switch s.loss {
	case olderSnapshot:
		s.primary.Kill()
		if err := s.primary.Start(); err != nil {
			s.t.Fatal(err)
		}
	case failoverThatLostWrites:
		failOver(s.t, s.g)
		s.addr.Store(s.g.Replicas[0].Addr())
	case restartEmpty:
		if err := s.primary.RestartEmpty(); err != nil {
			s.t.Fatal(err)
		}
	}
}

// otherTakesTheKey: X takes the key on the new history (after the
// quarantine, when there is one); without fencing after the restart-empty,
// so that the counter stays missing and W's reply reports 0.
func (s *historyScenario) otherTakesTheKey() (*lock.Lease, time.Time) {
	s.t.Helper()
	opts := append(s.opts, lock.WithIdentity("other"))
	if s.loss == restartEmpty {
		opts = append(opts, lock.WithFencing(false))
	}
	theirs, err := newLocker(s.t, s.client(), opts...).Acquire(s.ctx, historyKey)
	if err != nil {
		s.t.Fatal(err)
	}
	return theirs, time.Now()
}

// lateWaiter is W: queued, its first notice held back until deliver, its
// commands held at gate while closed.
type lateWaiter struct {
	t              *testing.T
	ctx            context.Context
	gate           *attemptGate
	deliver        func()
	heard          atomic.Bool
	confirmedFirst atomic.Int32
	got            chan lateResult
}

type lateResult struct {
	lease *lock.Lease
	at    time.Time
}

// queueWaiter starts W's Acquire, waits until it queued, and closes its
// gate.
func (s *historyScenario) queueWaiter() *lateWaiter {
	t := s.t
	t.Helper()
	w := &lateWaiter{t: t, ctx: s.ctx, gate: &attemptGate{}, got: make(chan lateResult, 1)}
	hold := make(chan struct{})
	w.deliver = sync.OnceFunc(func() { close(hold) })
	var once sync.Once
	lock.SetGrantedHook(t, func(string) { once.Do(func() { w.heard.Store(true); <-hold }) })
	lock.SetHandOffHook(t, func(counted, started bool) {
		if counted && !started {
			w.confirmedFirst.Add(1)
		}
	})
	waiter := lockerOnDoomedMaster(t, s.client(w.gate), append(s.opts, lock.WithIdentity("waiter"))...)
	// Cleanups run last first: the gate opens and the notice goes before
	// the waiter's Locker closes, on every way out of the test.
	t.Cleanup(func() { w.gate.open(nil) })
	t.Cleanup(w.deliver)
	go func() {
		l, err := waiter.Acquire(s.ctx, historyKey)
		if err != nil && s.ctx.Err() == nil {
			t.Error(err)
		}
		w.got <- lateResult{l, time.Now()}
	}()
	waitQueued(s.ctx, t, s.admin, historyKey, protocol.LineKey(historyKey), "waiter")
	w.gate.close()
	return w
}

// result says whether W held the key while X did (from otherFrom), then
// releases X's lease and W's.
func (w *lateWaiter) result(theirs *lock.Lease, otherFrom time.Time) bool {
	w.t.Helper()
	var r lateResult
	select {
	case r = <-w.got:
	case <-time.After(3 * time.Second):
	}
	overlap := r.lease != nil && r.at.After(otherFrom)
	if err := theirs.Release(w.ctx); err != nil {
		w.t.Fatalf("X's release: %v (its key was taken from it)", err)
	}
	if r.lease == nil {
		r = <-w.got
	}
	if r.lease != nil {
		releaseAtEnd(w.t, r.lease)
	}
	return overlap
}

// attemptGate holds a client's commands while closed (they are not sent:
// nothing ambiguous), and once open again calls then after the second
// script call (an acquisition attempt) that completes with a reply.
type attemptGate struct {
	mu     sync.Mutex
	closed chan struct{}
	then   func()
	calls  int
}

func (g *attemptGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = make(chan struct{})
}

// open lets the held commands go, and calls then (nil: nothing) after the
// second script call completes.
func (g *attemptGate) open(then func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
	g.then, g.calls = then, 0
}

func (g *attemptGate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

func (g *attemptGate) done(cmds ...redis.Cmder) {
	g.mu.Lock()
	var then func()
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "evalsha", "eval", "fcall":
			// A call that failed (NOSCRIPT before the EVAL that follows
			// it, after a restart) is no attempt.
			if cmd.Err() != nil {
				continue
			}
			if g.calls++; g.calls == 2 {
				then = g.then
			}
		}
	}
	g.mu.Unlock()
	if then != nil {
		then()
	}
}

func (*attemptGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *attemptGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.wait(ctx)
		err := next(ctx, cmd)
		g.done(cmd)
		return err
	}
}

func (g *attemptGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		g.wait(ctx)
		err := next(ctx, cmds)
		g.done(cmds...)
		return err
	}
}

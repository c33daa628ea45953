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
	type loss int
	const (
		olderSnapshot loss = iota
		failoverThatLostWrites
		restartEmpty
	)
	names := map[loss]string{olderSnapshot: "restart from an older snapshot",
		failoverThatLostWrites: "failover that lost the last two increments", restartEmpty: "restart with an empty disk"}
	type variant struct {
		loss       loss
		quarantine bool
		blind      bool
	}
	var variants []variant
	for _, l := range []loss{olderSnapshot, failoverThatLostWrites, restartEmpty} {
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
			ctx := ctxTimeout(t, time.Minute)
			opts := []lock.Option{lock.WithTTL(quarantineTTL)}
			if v.quarantine {
				opts = quarantined(lock.MissingEpochWaits)
			}
			const key = "late-across-history"

			// The server, and the one the clients follow to after the loss.
			var g *redistest.Replicated
			var primary, after *redistest.Server
			if v.loss == failoverThatLostWrites {
				g = redistest.StartReplicated(t, 1)
				primary, after = g.Master, g.Replicas[0]
				defer g.Replicas[0].Resume() // never left paused on an early failure
			} else {
				primary = redistest.StartStandalone(t)
				after = primary
			}
			var addr atomic.Value
			addr.Store(primary.Addr())
			client := func(hooks ...redis.Hook) *redis.Client {
				c := primary.Client(t, func(o *redis.Options) {
					o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
						return (&net.Dialer{}).DialContext(ctx, network, addr.Load().(string))
					}
				})
				for _, h := range hooks {
					c.AddHook(h)
				}
				return c
			}
			admin := client()
			if v.quarantine {
				recordEpoch(ctx, t, admin, key, g != nil)
			}

			holder := lockerOnDoomedMaster(t, client(), append(opts, lock.WithIdentity("holder"))...)
			first, err := holder.TryAcquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			switch v.loss {
			case olderSnapshot:
				if err := admin.Save(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			case failoverThatLostWrites:
				if n, err := admin.Wait(ctx, 1, 5000).Result(); err != nil || n < 1 {
					t.Fatalf("WAIT 1 = %d, %v", n, err)
				}
				isolateReplica(t, g)
			}
			// A grant the loss takes back: the holder releases and takes
			// the key again.
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			second, err := holder.TryAcquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}

			// W queues; its first notice is held back until the test says,
			// and its commands wait at a gate while the loss happens.
			hold := make(chan struct{})
			deliver := sync.OnceFunc(func() { close(hold) })
			defer deliver()
			var once sync.Once
			var heard atomic.Bool
			lock.SetGrantedHook(t, func(string) { once.Do(func() { heard.Store(true); <-hold }) })
			var confirmedFirst atomic.Int32
			lock.SetHandOffHook(t, func(counted, started bool) {
				if counted && !started {
					confirmedFirst.Add(1)
				}
			})
			gate := &attemptGate{}
			defer gate.open(nil)
			waiter := lockerOnDoomedMaster(t, client(gate), append(opts, lock.WithIdentity("waiter"))...)
			type result struct {
				lease *lock.Lease
				at    time.Time
			}
			got := make(chan result, 1)
			go func() {
				l, err := waiter.Acquire(ctx, key)
				if err != nil && ctx.Err() == nil {
					t.Error(err)
				}
				got <- result{l, time.Now()}
			}()
			waitQueued(ctx, t, admin, key, protocol.LineKey(key), "waiter")
			gate.close()
			// The release hands the key to W (counter G); the notice is
			// held back.
			if err := second.Release(ctx); err != nil {
				t.Fatal(err)
			}

			// The notice reached W's subscription (and is held there).
			waitFor(t, 5*time.Second, "the notice to reach the waiter", heard.Load)

			// The loss.
			switch v.loss {
			case olderSnapshot:
				primary.Kill()
				if err := primary.Start(); err != nil {
					t.Fatal(err)
				}
			case failoverThatLostWrites:
				failOver(t, g)
				addr.Store(after.Addr())
			case restartEmpty:
				if err := primary.RestartEmpty(); err != nil {
					t.Fatal(err)
				}
			}

			// X takes the key on the new history (after the quarantine,
			// when there is one); without fencing after the restart-empty,
			// so that the counter stays missing and W's reply reports 0.
			xOpts := append(opts, lock.WithIdentity("other"))
			if v.loss == restartEmpty {
				xOpts = append(xOpts, lock.WithFencing(false))
			}
			other := newLocker(t, client(), xOpts...)
			theirs, err := other.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			otherFrom := time.Now()
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
			gate.open(deliver)

			var r result
			select {
			case r = <-got:
			case <-time.After(3 * time.Second):
			}
			overlap := r.lease != nil && r.at.After(otherFrom)
			if err := theirs.Release(ctx); err != nil {
				t.Fatalf("X's release: %v (its key was taken from it)", err)
			}
			if r.lease == nil {
				r = <-got
			}
			if r.lease != nil {
				releaseAtEnd(t, r.lease)
			}
			if overlap != v.blind {
				t.Fatalf("the waiter held the key while X did: %v, want %v", overlap, v.blind)
			}
			if !v.blind && confirmedFirst.Load() == 0 {
				t.Fatal("the late notice was never weighed (the scenario did not happen)")
			}
		})
	}
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

package chaos

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The waiting line (protocol 2) under faults: a waiter killed at the head,
// the head paused across its hand-off, Redis restarted with waiters queued.
// Waiters are helper processes, as pods would be.

// queueHelpers starts n helpers in role one after another, each once the
// one before has its place in key's line, so that they queue in index order.
func queueHelpers(t *testing.T, c *redis.Client, key string, n int, role string, env map[string]string) []*helper {
	t.Helper()
	hs := make([]*helper, n)
	for i := range hs {
		hs[i] = startHelper(t, role, env)
		deadline := time.Now().Add(10 * time.Second)
		for c.ZCard(t.Context(), protocol.LineKey(key)).Val() < int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("helper %d did not queue within 10s", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return hs
}

// await returns the helper's next event of kind, or false when none came
// by deadline (or the helper exited). A helper killed after "holding" is
// recorded with that claim.
func (h *helper) await(kind string, deadline time.Time) (event, bool) {
	timeout := time.After(time.Until(deadline))
	for {
		select {
		case e, ok := <-h.events:
			if !ok {
				return event{}, false
			}
			if e.Kind == kind {
				return e, true
			}
		case <-timeout:
			return event{}, false
		}
	}
}

// holdInThisProcess takes key in the test process, on a client and Locker
// of its own, as "holder"; from is when its claim starts.
func holdInThisProcess(t *testing.T, srv *redistest.Server, key string, ttl time.Duration) (*lock.Lease, int64) {
	t.Helper()
	holder := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("holder"))
	lease, err := holder.TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return lease, Mono()
}

// collectClaims records each helper's claim, and reports as a liveness
// violation every helper that did not get the key by deadline.
func (s *scenario) collectClaims(hs []*helper, kind string, deadline time.Time) []Violation {
	var vs []Violation
	for i, h := range hs {
		e, ok := h.await(kind, deadline)
		if !ok {
			vs = append(vs, Violation(fmt.Sprintf("waiter %d never got the key (no %q within the bound)", i, kind)))
			continue
		}
		s.h.Claim(*e.Claim)
	}
	return vs
}

// A waiter is SIGKILLed at the head of the line just before the release
// hands it the key. The release holds the key for the dead waiter only for
// the hand-off window; the waiters behind it, in other processes, hear no
// confirmation and look again: each gets the key within seconds, with no
// overlap and increasing fences. Naive: a hand-off that waits for its waiter
// as long as a lease (here an hour) leaves the others waiting.
func TestLineHeadKilled(t *testing.T) {
	variants(t, "redlease", "naive hand-off that waits for its waiter as long as a lease", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		ctx := s.ctx
		const key = "line-head"
		holder, err := protocol.NewValue("holder")
		if err != nil {
			t.Fatal(err)
		}
		args := protocol.AcquireArgs{Value: holder, TTL: 2 * time.Second, Fencing: true, Identity: "holder"}
		res, err := protocol.ParseAttempt(protocol.AcquireScript.Run(ctx, c, protocol.AcquireKeys(key), args.Argv()...))
		if err != nil || !res.Acquired {
			t.Fatalf("holder's acquire = %v, %v", res, err)
		}
		from := Mono()
		env := map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": "2s", "HOLD": "50ms", "ROUNDS": "1"}
		ws := queueHelpers(t, c, key, 3, "line-waiter", env)
		ws[0].signal(syscall.SIGKILL)
		_ = ws[0].cmd.Wait()

		window := protocol.HandoffWindow
		if s.naive {
			window = time.Hour
		}
		if ok, err := protocol.Release(ctx, protocol.Scripts(c), key, holder, protocol.ReleaseArgs{Window: window}); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		s.h.Claim(Claim{Client: "holder", Key: key, Fence: res.Fence, From: from, Until: Mono()})
		// Expected: the 1 s window, then one hold each. Bound: 6 s.
		s.check("liveness", s.collectClaims(ws[1:], "claim", time.Now().Add(6*time.Second)))
		if !s.naive {
			s.check("S1", Overlaps(s.h.Claims()))
			s.check("fences", FencesNotIncreasing(s.h.Claims()))
		}
	})
}

// The head of the line is SIGSTOPped; the holder releases and the key is
// handed to it; the window passes and the waiter behind takes the key; the
// head resumes while that one holds. redlease: the head's lease would start
// only from its own confirming write, which now fails; it queues again and
// gets the key later: no overlap. Naive: a waiter that takes the hand-off
// message itself as its lease believes it holds the key at the same time as
// the other waiter, which S1 catches.
func TestLineHeadPausedAcrossItsHandOff(t *testing.T) {
	variants(t, "redlease", "naive waiter that takes the hand-off message as its lease", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		ctx := s.ctx
		const key = "line-paused"
		const ttl = 2 * time.Second
		lease, from := holdInThisProcess(t, srv, key, ttl)
		role := "line-waiter"
		if s.naive {
			role = "naive-line-waiter"
		}
		env := map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": ttl.String(), "HOLD": "50ms", "ROUNDS": "1"}
		head := queueHelpers(t, c, key, 1, role, env)[0]
		head.signal(syscall.SIGSTOP)

		other := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("other"))
		taken, done := make(chan struct{}), make(chan error, 1)
		go func() {
			l, err := other.Acquire(ctx, key)
			if err != nil {
				close(taken)
				done <- err
				return
			}
			otherFrom := Mono()
			close(taken)
			time.Sleep(1500 * time.Millisecond) // holds while the head resumes
			done <- s.release("other", l, otherFrom)
		}()
		for c.ZCard(ctx, protocol.LineKey(key)).Val() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := s.release("holder", lease, from); err != nil {
			t.Fatal(err)
		}
		select {
		case <-taken:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter behind the paused head did not get the key within 10s")
		}
		head.signal(syscall.SIGCONT)
		if err := <-done; err != nil {
			t.Fatalf("the other waiter: %v", err)
		}
		kind := "claim"
		if s.naive {
			kind = "holding"
		}
		if vs := s.collectClaims([]*helper{head}, kind, time.Now().Add(10*time.Second)); len(vs) > 0 {
			t.Fatal(vs[0])
		}
		s.check("S1", Overlaps(s.h.Claims()))
	})
}

// Redis is restarted (orderly, with an append-only file, as production runs
// it) while three waiters are queued, and the holder releases as soon as it
// is back: the hand-off message may reach nobody, since the waiters'
// subscriptions are still reconnecting. redlease: a waiter whose
// subscription comes back looks at the key, finds it handed to it, and the
// line moves on; every waiter gets the key, with no overlap and increasing
// fences. Naive: waiters that trust the messages alone wait forever.
func TestRedisRestartWithWaitersQueued(t *testing.T) {
	variants(t, "redlease", "naive waiters that trust the messages alone", 2*time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t, redistest.WithConfig("--appendonly", "yes", "--appendfsync", "always"))
		c := srv.Client(t)
		ctx := s.ctx
		const key = "line-restart"
		const ttl = 3 * time.Second
		lease, from := holdInThisProcess(t, srv, key, ttl)
		role, env := "line-waiter", map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": ttl.String(), "HOLD": "50ms", "ROUNDS": "1"}
		if s.naive {
			role, env["CONFIRM"] = "naive-line-waiter", "1"
		}
		ws := queueHelpers(t, c, key, 3, role, env)

		srv.Stop()
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		if n := c.ZCard(ctx, protocol.LineKey(key)).Val(); n != 3 {
			t.Fatalf("after the restart the line holds %d places, want the 3 the append-only file kept", n)
		}
		if err := s.release("holder", lease, from); err != nil {
			t.Logf("the holder's release after the restart: %v", err) // its claim is recorded either way
		}
		// Expected: a reconnect (about 100 ms) and three holds. Bound: 8 s.
		s.check("liveness", s.collectClaims(ws, "claim", time.Now().Add(8*time.Second)))
		if !s.naive {
			s.check("S1", Overlaps(s.h.Claims()))
			s.check("fences", FencesNotIncreasing(s.h.Claims()))
		}
	})
}

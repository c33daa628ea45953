package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// A waiter for {a, b} is not overtaken by single-key waiters who come
// after it: a holds S1, b holds S2; W waits for both; X (for a) and Y
// (for b) come after W. S1's release reserves a for W, which X cannot
// take; S2's release reserves b for W; W's next attempt takes both, and
// X and Y are still waiting. The naive caller that retries the
// all-or-nothing try without a place in the lines loses a to X.
func TestAWaiterForSeveralKeysIsNotOvertaken(t *testing.T) {
	for _, naive := range []bool{false, true} {
		name := map[bool]string{false: "redlease", true: "naive: retrying without a place"}[naive]
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			args := func(v string, place time.Duration) protocol.AcquireArgs {
				return protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: "pod", Place: place,
					Queued: place > 0, Window: time.Second}
			}
			single := func(key, v string) int64 {
				t.Helper()
				c := protocol.AcquireCall(key, args(v, time.Minute))
				res, err := ints(s.run(c.Script, c.Keys, c.Args...))
				s.must(err)
				return res[0]
			}
			all := func(v string) int64 {
				t.Helper()
				place := time.Minute
				if naive {
					place = 0
				}
				c := protocol.AcquireAllWaitCall([]string{"a", "b"}, args(v, place))
				res, err := ints(s.run(c.Script, c.Keys, c.Args...))
				s.must(err)
				return res[0]
			}
			release := func(key, v string) {
				t.Helper()
				c := protocol.ReleaseCall(key, v, protocol.ReleaseArgs{Window: time.Second})
				s.must(s.run(c.Script, c.Keys, c.Args...).Err())
			}
			s1, s2, w, x, y := value(t, "s1"), value(t, "s2"), value(t, "w"), value(t, "x"), value(t, "y")
			expect(t, single("a", s1), 1, "S1 on a")
			expect(t, single("b", s2), 1, "S2 on b")
			expect(t, all(w), 0, "W beside S1 and S2")
			expect(t, single("a", x), 0, "X after W")
			expect(t, single("b", y), 0, "Y after W")
			release("a", s1)
			xGot := single("a", x) == 1 || s.c.Get(s.ctx, "a").Val() == x
			if xGot != naive {
				t.Fatalf("X took a before W: %v", xGot)
			}
			release("b", s2)
			wGot := all(w) == 1
			if wGot == naive {
				t.Fatalf("W took {a, b}: %v", wGot)
			}
			if !naive && (s.c.Get(s.ctx, "a").Val() != w || s.c.Get(s.ctx, "b").Val() != w) {
				t.Fatal("W's acquisition did not leave both keys W's")
			}
		})
	}
}

// A protocol-6 release that pops a waiter for several keys hands it the
// key as a lock (SET key value, as to any waiter), not as its reservation
// marker: the waiter's next attempt counts the key as its own and takes
// its set. Were only the marker its own, the waiter would find the key
// held by its own value, wait out the hand-off window, and queue again at
// the back.
func TestAProtocol6ReleaseHandsAMultiKeyWaiterItsKey(t *testing.T) {
	s := newServer(t)
	args := func(v string, place time.Duration) protocol.AcquireArgs {
		return protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: "pod", Place: place,
			Queued: place > 0, Window: time.Second}
	}
	all := func(v string) []int64 {
		t.Helper()
		c := protocol.AcquireAllWaitCall([]string{"a", "b"}, args(v, time.Minute))
		res, err := ints(s.run(c.Script, c.Keys, c.Args...))
		s.must(err)
		return res
	}
	writer, w := value(t, "v6-writer"), value(t, "w")
	expect(t, mustInts(t, v6Acquire.Run(s.ctx, s.c, protocol.AcquireKeys("a"), args(writer, 0).Argv()...))[0], 1, "the protocol-6 writer on a")
	expect(t, all(w)[0], 0, "W behind it")
	call := protocol.FullReleaseCall("a", writer, protocol.ReleaseArgs{Window: time.Second})
	n, err := v6Release.Run(s.ctx, s.c, call.Keys, call.Args...).Int()
	s.must(err)
	expect(t, int64(n), 1, "the protocol-6 release")
	if got := s.c.Get(s.ctx, "a").Val(); got != w {
		t.Fatalf("after the protocol-6 release a holds %q, want W's value", got)
	}
	got := all(w)
	expect(t, got[0], 1, "W's next attempt")
	for _, k := range []string{"a", "b"} {
		if v := s.c.Get(s.ctx, k).Val(); v != w {
			t.Fatalf("%s holds %q, want W's value", k, v)
		}
	}
}

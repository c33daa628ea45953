package protocol_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// Shared holds at the scripts (protocol 7): two readers hold a key; a
// writer queues; a new reader is refused while the writer waits (writer
// preference); the first reader's release leaves the key to the second;
// the last reader's release hands the key to the writer. Each naive
// variant breaks exactly the property it names, and the test tells.
func TestSharedHoldsAtTheScripts(t *testing.T) {
	const (
		ignoresWriter = "naive: a new reader ignores the queued writer"
		handsTooSoon  = "naive: a release hands the key over while a reader remains"
	)
	variants := map[string]struct{ acquire, release *redis.Script }{
		"redlease": {},
		ignoresWriter: {acquire: protocol.Variant(protocol.AcquireSharedScript,
			"if head[1] then\n  if redis.call('EXISTS', key) == 0 then", "if false then\n  if redis.call('EXISTS', key) == 0 then")},
		handsTooSoon: {release: protocol.Variant(protocol.ReleaseSharedScript,
			"if redis.call('ZCARD', key) > 0 then", "if false then")},
	}
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			const key = "catalog"
			args := func(value string, place time.Duration) protocol.AcquireArgs {
				return protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: "pod",
					Place: place, Queued: place > 0, Window: time.Second}
			}
			shared := func(value string) int64 {
				t.Helper()
				call := protocol.AcquireSharedCall(key, args(value, time.Minute))
				var cmd *redis.Cmd
				if v.acquire != nil {
					cmd = v.acquire.Run(s.ctx, s.c, call.Keys, call.Args...)
				} else {
					cmd = s.run(call.Script, call.Keys, call.Args...)
				}
				res, err := ints(cmd)
				s.must(err)
				return res[0]
			}
			release := func(value string) {
				t.Helper()
				call := protocol.ReleaseSharedCall(key, value, protocol.ReleaseArgs{Window: time.Second})
				var cmd *redis.Cmd
				if v.release != nil {
					cmd = v.release.Run(s.ctx, s.c, call.Keys, call.Args...)
				} else {
					cmd = s.run(call.Script, call.Keys, call.Args...)
				}
				n, err := cmd.Int64()
				s.must(err)
				expect(t, n, 1, "a reader's release")
			}
			r1, r2, r3, w := value(t, "r1"), value(t, "r2"), value(t, "r3"), value(t, "w")
			expect(t, shared(r1), 1, "the first reader")
			expect(t, shared(r2), 1, "the second reader")
			call := protocol.AcquireCall(key, args(w, time.Minute))
			res, err := ints(s.run(call.Script, call.Keys, call.Args...))
			s.must(err)
			expect(t, res[0], 0, "the writer beside two readers")

			if got := shared(r3) == 1; got != (name == ignoresWriter) {
				t.Errorf("a new reader while the writer waits took the key: %v", got)
			}
			release(r1)
			if got := s.c.Type(s.ctx, key).Val() == "string"; got != (name == handsTooSoon) {
				t.Errorf("the writer was handed the key while a reader held it: %v", got)
			}
			if name == "redlease" {
				release(r2)
				if got := s.c.Get(s.ctx, key).Val(); got != w {
					t.Errorf("after the last reader the key holds %q, want the writer's value", got)
				}
			}
		})
	}
}

// A protocol-6 client knows one kind of waiter: its release pops a shared
// waiter from the line and hands it the key as a lock. The waiter's
// confirming attempt (protocol 7) turns that into its shared hold, so a
// reader waiting behind a protocol-6 writer is served in a mixed roll-out,
// and a second reader then shares the key with it.
func TestAProtocol6ReleaseHandsASharedWaiterItsHold(t *testing.T) {
	s := newServer(t)
	const key = "rolled"
	args := func(value string, place time.Duration) protocol.AcquireArgs {
		return protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: "pod",
			Place: place, Queued: place > 0, Window: time.Second}
	}
	shared := func(value string) []int64 {
		t.Helper()
		call := protocol.AcquireSharedCall(key, args(value, time.Minute))
		res, err := ints(s.run(call.Script, call.Keys, call.Args...))
		s.must(err)
		return res
	}
	writer, reader := value(t, "v6-writer"), value(t, "reader")
	expect(t, mustInts(t, v6Acquire.Run(s.ctx, s.c, protocol.AcquireKeys(key), args(writer, 0).Argv()...))[0], 1, "the protocol-6 writer")
	expect(t, shared(reader)[0], 0, "the reader behind the writer")
	call := protocol.FullReleaseCall(key, writer, protocol.ReleaseArgs{Window: time.Second})
	n, err := v6Release.Run(s.ctx, s.c, call.Keys, call.Args...).Int()
	s.must(err)
	expect(t, int64(n), 1, "the protocol-6 release")
	if got := s.c.Get(s.ctx, key).Val(); got != reader {
		t.Fatalf("after the protocol-6 release the key holds %q, want the reader's value as a lock", got)
	}
	expect(t, shared(reader)[0], 1, "the reader's confirming attempt")
	if kind := s.c.Type(s.ctx, key).Val(); kind != "zset" {
		t.Fatalf("the reader's hold is a %s, want a shared hold (zset)", kind)
	}
	expect(t, shared(value(t, "second-reader"))[0], 1, "a second reader beside it")
}

// mustInts is ints of cmd, failing t on an error.
func mustInts(t *testing.T, cmd *redis.Cmd) []int64 {
	t.Helper()
	res, err := ints(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

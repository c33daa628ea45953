package protocol_test

import (
	"context"
	_ "embed"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The last protocol-3 scripts as released (each with the pieces prepended
// to it): what a client not yet upgraded to protocol 4 runs.
var (
	//go:embed testdata/v3/acquire.lua
	v3AcquireSrc string
	//go:embed testdata/v3/release.lua
	v3ReleaseSrc string
	//go:embed testdata/v3/permit_acquire.lua
	v3PermitAcquireSrc string
	//go:embed testdata/v3/permit_release.lua
	v3PermitReleaseSrc string
	v3Acquire          = redis.NewScript(v3AcquireSrc)
	v3Release          = redis.NewScript(v3ReleaseSrc)
	v3PermitAcquire    = redis.NewScript(v3PermitAcquireSrc)
	v3PermitRelease    = redis.NewScript(v3PermitReleaseSrc)
)

// handOff is one way of running the acquire and release scripts of a
// protocol, for a lock or a semaphore of 2 permits.
type handOff struct {
	s       *server
	key     string
	permits int
}

// take is an acquire (queued: the value may be in line); it returns the
// reply.
func (h handOff) take(old bool, v string, queued bool) []int64 {
	h.s.t.Helper()
	args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: protocol.IdentityFromValue(v),
		Place: time.Minute, Queued: queued, Window: time.Second, Permits: h.permits}
	var cmd *redis.Cmd
	switch {
	case h.permits > 0 && old:
		cmd = v3PermitAcquire.Run(h.s.ctx, h.s.c, protocol.AcquirePermitKeys(h.key), args.PermitArgv()...)
	case h.permits > 0:
		cmd = h.s.run(protocol.AcquirePermitScript, protocol.AcquirePermitKeys(h.key), args.PermitArgv()...)
	case old:
		cmd = v3Acquire.Run(h.s.ctx, h.s.c, protocol.AcquireKeys(h.key), args.Argv()...)
	default:
		cmd = h.s.run(protocol.AcquireScript, protocol.AcquireKeys(h.key), args.Argv()...)
	}
	res, err := ints(cmd)
	h.s.must(err)
	return res
}

// give is a release by v (a window of 1 s).
func (h handOff) give(old bool, v string) {
	h.s.t.Helper()
	var n int64
	var err error
	switch {
	case h.permits > 0 && old:
		n, err = v3PermitRelease.Run(h.s.ctx, h.s.c, []string{h.key, protocol.EventsChannel(h.key), protocol.PermitLineKey(h.key),
			protocol.HoldersKey(h.key)}, v, 1000, "0", h.permits, "0").Int64()
	case h.permits > 0:
		var ok bool
		ok, err = protocol.ReleasePermit(h.s.ctx, h.s.r, h.key, v, h.permits, protocol.ReleaseArgs{Window: time.Second})
		n = map[bool]int64{true: 1}[ok]
	case old:
		n, err = v3Release.Run(h.s.ctx, h.s.c, []string{h.key, protocol.EventsChannel(h.key), protocol.LineKey(h.key)},
			v, 1000, "0", "0").Int64()
	default:
		var ok bool
		ok, err = protocol.Release(h.s.ctx, h.s.r, h.key, v, protocol.ReleaseArgs{Window: time.Second})
		n = map[bool]int64{true: 1}[ok]
	}
	h.s.must(err)
	expect(h.s.t, n, 1, "release")
}

// A hand-off between protocol-3 and protocol-4 clients, both ways, for a
// lock and a semaphore: a protocol-4 release counts the hand-off (the
// notice carries the counter, the expiry it set and, for a semaphore, the
// live permits) and a protocol-3 waiter, which reads the notice's first
// field only, confirms it with its own acquire, taking a fence above the
// counter; a protocol-3 release sends the notice without them, and a
// protocol-4 waiter confirms first with its acquire. Every fence is above
// the one before, and a third client is refused the key or permit handed
// over, whichever protocol hands it.
func TestProtocol3And4HandOffsSideBySide(t *testing.T) {
	for _, tt := range []struct {
		name                string
		oldWaiter, oldGiver bool
		permits             int
	}{
		{"lock: protocol-3 waiter, protocol-4 release", true, false, 0},
		{"lock: protocol-4 waiter, protocol-3 release", false, true, 0},
		{"semaphore: protocol-3 waiter, protocol-4 release", true, false, 2},
		{"semaphore: protocol-4 waiter, protocol-3 release", false, true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			h := handOff{s: s, key: "mixed", permits: tt.permits}
			holders := []string{value(t, "holder:1")}
			if tt.permits == 2 {
				holders = append(holders, value(t, "holder:2"))
			}
			for _, v := range holders {
				res := h.take(tt.oldGiver, v, false)
				s.took(res[0] == 1, res[1], "a holder")
			}
			waiter := value(t, "waiter:1")
			res := h.take(tt.oldWaiter, waiter, false)
			expect(t, res[0], 0, "the waiter's attempt on a full key")
			expect(t, len(res), map[bool]int{true: 2, false: 5}[tt.oldWaiter], "integer fields of the 'not acquired' reply")

			ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(h.key))
			defer func() { _ = ps.Close() }()
			_, err := ps.Receive(s.ctx)
			s.must(err)
			h.give(tt.oldGiver, holders[0])
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			msg, err := ps.ReceiveMessage(ctx)
			cancel()
			s.must(err)
			kind, rest, _ := strings.Cut(msg.Payload, " ")
			expect(t, kind, "granted", "message")
			g := protocol.ParseGrant(rest)
			expect(t, g.Digest, protocol.ValueDigest(waiter), "the message's first field (all a protocol-3 waiter reads)")
			expect(t, g.Counted, !tt.oldGiver, "the notice carries the hand-off's counter")
			if g.Counted {
				expect(t, strconv.FormatInt(g.Counter, 10), s.counter(h.key), "the notice's counter (the fence counter)")
				expect(t, g.History, s.history(), "the notice's history (the server's replication ID)")
				expect(t, g.PX, time.Second, "the notice's expiry")
				expect(t, g.Held, tt.permits, "the notice's live permits (0 for a lock)")
				if g.Counter <= s.lastFence {
					t.Fatalf("the hand-off's counter %d is not above the last fence %d", g.Counter, s.lastFence)
				}
				s.lastFence = g.Counter
				if len(res) == 5 && res[2] >= g.Counter {
					t.Fatalf("the waiter's attempt saw counter %d, not below the hand-off's %d", res[2], g.Counter)
				}
			}
			// Nobody else gets what was handed over, whoever asks.
			for _, old := range []bool{true, false} {
				other := h.take(old, value(t, "other:1"), false)
				expect(t, other[0], 0, "a third client's attempt on what was handed over")
			}
			// The waiter confirms with its own acquire (a protocol-4 waiter
			// does so after a protocol-3 release's notice, and it may always).
			res = h.take(tt.oldWaiter, waiter, true)
			s.took(res[0] == 1, res[1], "the waiter, confirming")
		})
	}
}

// The hand-off counter: every "not acquired" reply reports it, and every
// hand-off (a release's, or a FIFO acquire's to the head of the line)
// increments it, the notice carrying the new value. So an attempt whose
// reply saw a counter lower than a notice's ran before that hand-off.
func TestHandOffsAreCounted(t *testing.T) {
	s := newServer(t)
	const key = "counted"
	holder, w1, w2 := value(t, "holder:1"), value(t, "w1:1"), value(t, "w2:1")
	ok, f := s.take(key, holder, false)
	s.took(ok, f, "the holder")
	attempt := func(v string) int64 {
		t.Helper()
		args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: "w:1", Place: time.Minute, Window: 200 * time.Millisecond, FIFO: true}
		res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...))
		s.must(err)
		expect(t, res[0], 0, "an attempt on a held key")
		return res[2]
	}
	before := attempt(w1)
	expect(t, strconv.FormatInt(before, 10), s.counter(key), "the counter a 'not acquired' reply reports")
	attempt(w2)
	ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	_, err := ps.Receive(s.ctx)
	s.must(err)
	expect(t, s.give(key, holder, 200*time.Millisecond), true, "release")
	g := receiveGrant(t, s, ps)
	expect(t, g.Counter, before+1, "the release's hand-off counter")
	expect(t, g.PX, 200*time.Millisecond, "the release's hand-off expiry")
	expect(t, attempt(w2), g.Counter, "the counter an attempt after the hand-off reports")
	// w1 never confirms; its window runs out; a FIFO attempt by a
	// newcomer hands the free key to w2, first in line, and counts it.
	time.Sleep(300 * time.Millisecond)
	seen := attempt(value(t, "late:1"))
	g2 := receiveGrant(t, s, ps)
	expect(t, g2.Digest, protocol.ValueDigest(w2), "the FIFO hand-off's waiter")
	expect(t, g2.Counter, g.Counter+1, "the FIFO hand-off's counter")
	expect(t, seen, g2.Counter, "the counter the attempt that handed it over reports")
}

func receiveGrant(t *testing.T, s *server, ps *redis.PubSub) protocol.Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(ctx)
	s.must(err)
	kind, rest, _ := strings.Cut(msg.Payload, " ")
	expect(t, kind, "granted", "message")
	g := protocol.ParseGrant(rest)
	expect(t, g.Counted, true, "a counted hand-off")
	return g
}

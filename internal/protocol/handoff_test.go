package protocol_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

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

package protocol_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// server runs scripts on one redis-server: the current protocol's, the way
// -protocol.functions says (r), and, beside them, the last protocol-5
// scripts (history_upgrade_test.go). Every call fails the test on a Redis
// error, so the tests read as the protocol.
type server struct {
	t   testing.TB
	ctx context.Context
	c   *redis.Client
	r   protocol.Runner
	// lastFence is the last fence took saw.
	lastFence int64
}

func newServer(t testing.TB) *server {
	c := redistest.StartStandalone(t).Client(t)
	return &server{t: t, ctx: t.Context(), c: c, r: runner(t, c)}
}

// counter is key's fence counter, as a string: the hand-off counter a
// "granted" message carries (protocol 4).
func (s *server) counter(key string) string {
	s.t.Helper()
	v, err := s.c.Get(s.ctx, protocol.FenceKey(key)).Result()
	s.must(err)
	return v
}

// history is the server's replication ID: the counter's history that
// protocol 6's replies and notices name (lua/fence.lua's fence_history).
func (s *server) history() string {
	s.t.Helper()
	info, err := s.c.Info(s.ctx, "replication").Result()
	s.must(err)
	_, rest, ok := strings.Cut(info, "master_replid:")
	if !ok {
		s.t.Fatalf("INFO replication has no master_replid: %q", info)
	}
	id, _, _ := strings.Cut(rest, "\r\n")
	return id
}

// run runs the current protocol's script on the server.
func (s *server) run(script *protocol.Script, keys []string, args ...any) *redis.Cmd {
	return s.r.Run(s.ctx, protocol.Call{Script: script, Keys: keys, Args: args})
}

// ints is an acquire script's reply as integers: an older protocol's as
// it is, protocol 6's "not acquired" reply without its fifth element, the
// counter's history, which must be there.
func ints(cmd *redis.Cmd) ([]int64, error) {
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(res))
	for i, v := range res {
		switch v := v.(type) {
		case int64:
			out = append(out, v)
		case string:
			if i != 4 || v == "" {
				return nil, fmt.Errorf("unexpected reply %v", res)
			}
		default:
			return nil, fmt.Errorf("unexpected reply %v", res)
		}
	}
	return out, nil
}

func (s *server) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// take is an acquire by a waiter (it queues when the key is held).
func (s *server) take(key, value string, queued bool) (bool, int64) {
	s.t.Helper()
	args := protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: "new-pod:1",
		Place: time.Minute, Queued: queued, Window: time.Second}
	res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...))
	s.must(err)
	return res[0] == 1, res[1]
}

func (s *server) give(key, value string, window time.Duration) bool {
	s.t.Helper()
	ok, err := protocol.Release(s.ctx, s.r, key, value, protocol.ReleaseArgs{Window: window})
	s.must(err)
	return ok
}

func (s *server) holder(key string) string {
	s.t.Helper()
	h, err := protocol.ReadHolder(s.ctx, s.r, key)
	s.must(err)
	return h.Identity
}

// took fails the test unless who acquired, with a fence above every one
// took saw before on this server.
func (s *server) took(ok bool, f int64, who string) {
	s.t.Helper()
	expect(s.t, ok, true, who+" acquired")
	if f <= s.lastFence {
		s.t.Fatalf("%s got fence %d, not above %d", who, f, s.lastFence)
	}
	s.lastFence = f
}

// expect fails the test unless got is want.
func expect[T comparable](t testing.TB, got, want T, what string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func value(t *testing.T, identity string) string {
	t.Helper()
	v, err := protocol.NewValue(identity)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The waiting line's rules on one server: a release takes the first
// waiter off the line and hands it the key for the hand-off window only,
// until it confirms; a waiter that leaves (a release with a value that
// does not hold the key) loses its place.
func TestTheLineOnTheServer(t *testing.T) {
	s := newServer(t)
	const key = "line"
	holder := value(t, "holder:1")
	ok, _ := s.take(key, holder, false)
	expect(t, ok, true, "acquire")
	quitter, next, last := value(t, "quitter:1"), value(t, "next:1"), value(t, "last:1")
	for _, v := range []string{quitter, next, last} {
		ok, _ := s.take(key, v, false)
		expect(t, ok, false, "acquire of a held key")
	}
	expect(t, s.give(key, quitter, time.Second), false, "a waiter leaving (it held nothing)")
	ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	_, err := ps.Receive(s.ctx)
	s.must(err)
	expect(t, s.give(key, holder, 300*time.Millisecond), true, "release")
	expect(t, s.holder(key), "next:1", "the waiter the release handed the key to (the first still in line)")
	msg, err := ps.ReceiveMessage(s.ctx)
	s.must(err)
	expect(t, msg.Payload, "granted "+protocol.ValueDigest(next)+" "+protocol.ValueDigest(last)+" "+s.counter(key)+" 300 h"+s.history(),
		"message (the chosen waiter, then the one now first, the hand-off's counter and expiry)")
	if pttl := s.c.PTTL(s.ctx, key).Val(); pttl > 300*time.Millisecond || pttl <= 0 {
		t.Fatalf("the handed key's PTTL is %v, want the 300ms window", pttl)
	}
	expect(t, s.c.ZCard(s.ctx, protocol.LineKey(key)).Val(), 1, "places in line (only the last waiter's)")
	// Unconfirmed, the hand-off runs out and the key is free.
	time.Sleep(400 * time.Millisecond)
	expect(t, s.c.Exists(s.ctx, key).Val(), 0, "keys left after an unconfirmed hand-off's window")
	ok, _ = s.take(key, next, true)
	expect(t, ok, true, "acquire of the free key")
	if pttl := s.c.PTTL(s.ctx, key).Val(); pttl < 9*time.Second {
		t.Fatalf("PTTL after the acquisition = %v, want the 10s TTL", pttl)
	}
}

// A hand-off is told on the waiter channels of the chosen waiter and of the
// one now first in line, so only their processes wake; it goes on the
// events channel, which every waiting process hears, only when one of them
// had no subscriber there: a waiter of protocol 2 (which listens on the
// events channel only, so it still hears its hand-off during a rolling
// upgrade), or one whose process died.
func TestAHandOffIsToldOnlyToTheWaitersItConcerns(t *testing.T) {
	for _, tt := range []struct {
		name      string
		listening []string // identities subscribed to their waiter channels
		told      []string // of those, the ones told there
		broadcast bool
	}{
		{"both waiters listen", []string{"next:1", "last:1"}, []string{"next:1", "last:1"}, false},
		{"the next waiter is of protocol 2", []string{"next:1"}, []string{"next:1"}, true},
		// The others hear it on the events channel, which a waiter of
		// protocol 3 subscribes to as well.
		{"the chosen waiter died", []string{"last:1"}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			key := "told"
			holder, next, last := value(t, "holder:1"), value(t, "next:1"), value(t, "last:1")
			for i, v := range []string{holder, next, last} {
				ok, _ := s.take(key, v, false)
				expect(t, ok, i == 0, "acquire")
			}
			channels := []string{protocol.EventsChannel(key)}
			for _, id := range tt.listening {
				channels = append(channels, protocol.WaiterChannel(key, id))
			}
			ps := s.c.Subscribe(s.ctx, channels...)
			defer func() { _ = ps.Close() }()
			for range channels {
				_, err := ps.Receive(s.ctx)
				s.must(err)
			}
			expect(t, s.give(key, holder, time.Second), true, "release")
			want := "granted " + protocol.ValueDigest(next) + " " + protocol.ValueDigest(last) + " " + s.counter(key) + " 1000 h" + s.history()
			got := map[string]bool{}
			for {
				ctx, cancel := context.WithTimeout(s.ctx, 200*time.Millisecond)
				msg, err := ps.ReceiveMessage(ctx)
				cancel()
				if err != nil {
					break // nothing more within 200 ms
				}
				expect(t, msg.Payload, want, "message on "+msg.Channel)
				got[msg.Channel] = true
			}
			for _, id := range tt.listening {
				expect(t, got[protocol.WaiterChannel(key, id)], slices.Contains(tt.told, id), "told on "+id+"'s waiter channel")
			}
			expect(t, got[protocol.EventsChannel(key)], tt.broadcast, "told on the events channel")
		})
	}
}

// A key freed by expiry, with waiters in line: by default it goes to
// whoever asks first; with FIFO it goes to the head of the line, and the
// caller queues behind.
func TestAFreeKeyGoesToTheHeadOnlyWithFIFO(t *testing.T) {
	s := newServer(t)
	c, ctx := s.c, s.ctx
	for _, tt := range []struct {
		name string
		fifo bool
	}{{"default", false}, {"FIFO", true}} {
		t.Run(tt.name, func(t *testing.T) {
			key := "expired-" + tt.name
			if err := c.Set(ctx, key, value(t, "dead:1"), 0).Err(); err != nil {
				t.Fatal(err)
			}
			head := value(t, "head:1")
			ok, _ := s.take(key, head, false)
			expect(t, ok, false, "acquire of a held key")
			c.Del(ctx, key) // the holder's key expired
			caller := value(t, "caller:1")
			args := protocol.AcquireArgs{Value: caller, TTL: 10 * time.Second, Fencing: true, Identity: "caller:1",
				Place: time.Minute, FIFO: tt.fifo, Window: time.Second}
			res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...))
			if err != nil {
				t.Fatal(err)
			}
			got := protocol.IdentityFromValue(c.Get(ctx, key).Val())
			switch {
			case tt.fifo && (res[0] == 1 || got != "head:1"):
				t.Fatalf("FIFO: the caller's attempt = %v, key held by %q; want it handed to the head", res, got)
			case !tt.fifo && (res[0] != 1 || got != "caller:1"):
				t.Fatalf("default: the caller's attempt = %v, key held by %q; want the caller to take it", res, got)
			}
		})
	}
}

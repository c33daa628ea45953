/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

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

// waitFor makes a new value of identity wait for key, as a waiter's first
// attempt does: a lock's attempt, or with permits a semaphore's, that finds
// the key taken and takes a place in the line. It returns the value.
func (s *server) waitFor(key, identity string, permits int) string {
	s.t.Helper()
	v, err := protocol.NewValue(identity)
	s.must(err)
	if permits > 0 {
		if ok, _ := s.permitWith(key, permitArgs(v, permits, false, false)); ok {
			s.t.Fatalf("%s took a permit of %s: want it waiting", identity, key)
		}
		return v
	}
	args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: identity, Place: time.Minute}
	res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...))
	s.must(err)
	if res[0] == 1 {
		s.t.Fatalf("%s took %s: want it waiting", identity, key)
	}
	return v
}

// line is what a read of key reports of its waiting line.
func (s *server) line(key string, waiters int) *protocol.Line {
	s.t.Helper()
	reads, errs := protocol.ReadKeys(s.ctx, s.r, []string{key}, protocol.ReadLimits{Permits: 16, Waiters: waiters})
	s.must(errs[0])
	if reads[0].Permits != nil {
		return reads[0].Permits.Line
	}
	return reads[0].Holder.Line
}

// TestTheReadReportsTheWaitingLine: the read names the waiters of a key
// in arrival order (identities, never values), counts them all, and gives
// the oldest wait's start on the server's clock: for a lock, a semaphore,
// a key waited for by both kinds at once, and a free key.
func TestTheReadReportsTheWaitingLine(t *testing.T) {
	tests := []struct {
		name string
		// take takes the key before the waiters come (nothing: a free key).
		take func(s *server, key string)
		// kinds are the waiters' permits in arrival order (0: a lock's).
		kinds []int
		// shown is how many waiters the read asks for.
		shown int
	}{
		{"a lock's waiters", takeLock, []int{0, 0, 0}, 2},
		{"a semaphore's waiters", takePermits(2), []int{2, 2}, 20},
		{"both kinds wait for a lock", takeLock, []int{0, 2, 0}, 20},
		{"the count and the oldest only", takeLock, []int{0, 0}, 0},
		{"nobody waits", takeLock, nil, 20},
		{"a free key", func(*server, string) {}, nil, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			key := "orders/" + strings.ReplaceAll(tt.name, " ", "-")
			tt.take(s, key)
			var ids, values []string
			for i, permits := range tt.kinds {
				id := fmt.Sprintf("waiter-%d:1", i)
				values = append(values, s.waitFor(key, id, permits))
				ids = append(ids, id)
				time.Sleep(2 * time.Millisecond) // distinct arrivals, on the server's µs clock
			}
			l := s.line(key, tt.shown)
			if l == nil {
				t.Fatal("no waiting line reported")
			}
			checkLine(t, l, ids, tt.shown)
			for _, v := range values {
				if strings.Contains(fmt.Sprintf("%+v", *l), v[strings.LastIndex(v, "/")+1:]) {
					t.Errorf("the read returned a value's random part: %+v", *l)
				}
			}
		})
	}
}

// checkLine: l counts every waiter of ids (in arrival order), lists the
// first shown of them with increasing arrivals, and its oldest is the
// first arrival.
func checkLine(t *testing.T, l *protocol.Line, ids []string, shown int) {
	t.Helper()
	var got []string
	for i, w := range l.Waiters {
		got = append(got, w.Identity)
		if w.Since.IsZero() || w.Since.After(l.Now) || i > 0 && !w.Since.After(l.Waiters[i-1].Since) {
			t.Errorf("waiter %d since %v (server now %v): want increasing arrivals before now", i, w.Since, l.Now)
		}
	}
	want := ids[:min(len(ids), shown)]
	switch {
	case l.Count != len(ids):
		t.Errorf("count %d, want %d", l.Count, len(ids))
	case !slices.Equal(got, want):
		t.Errorf("waiters %q, want %q", got, want)
	case len(ids) == 0 && !l.Oldest.IsZero():
		t.Errorf("oldest %v with nobody waiting", l.Oldest)
	case len(ids) > 0 && (l.Oldest.IsZero() || time.Since(l.Oldest) > time.Minute || l.Now.Sub(l.Oldest) < 0):
		t.Errorf("oldest %v, server now %v: want the first arrival", l.Oldest, l.Now)
	case len(l.Waiters) > 0 && !l.Oldest.Equal(l.Waiters[0].Since):
		t.Errorf("oldest %v, first waiter since %v", l.Oldest, l.Waiters[0].Since)
	}
}

func takeLock(s *server, key string) {
	s.t.Helper()
	v, err := protocol.NewValue("holder:1")
	s.must(err)
	args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: "holder:1"}
	res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...))
	s.must(err)
	if res[0] != 1 {
		s.t.Fatalf("the holder did not take %s", key)
	}
}

func takePermits(n int) func(s *server, key string) {
	return func(s *server, key string) {
		s.t.Helper()
		for i := range n {
			v, err := protocol.NewValue(fmt.Sprintf("holder-%d:1", i))
			s.must(err)
			if ok, _ := s.permit(key, v, n, false); !ok {
				s.t.Fatalf("holder %d took no permit of %s", i, key)
			}
		}
	}
}

// TestALongLineIsCountedNotRead: 20,000 waiters cost the read a count
// (ZCARD) and the members asked for, not the line: a few hundred bytes
// for the count and the oldest, the 20 asked for with a list.
func TestALongLineIsCountedNotRead(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key, waiters = "batch/nightly", 20000
	if err := c.Set(ctx, key, "holder:1/"+strings.Repeat("a", 40), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMicro()
	members := make([]redis.Z, waiters)
	for i := range members {
		members[i] = redis.Z{Score: float64(now - int64(waiters-i)), Member: fmt.Sprintf("w-%05d:1/%040d", i, i)}
	}
	if err := c.ZAdd(ctx, protocol.LineKey(key), members...).Err(); err != nil {
		t.Fatal(err)
	}
	// The script loaded first, and INFO's own reply measured, so that
	// sent is the read's reply alone.
	protocol.ReadKeys(ctx, protocol.Scripts(c), []string{key}, protocol.ReadLimits{})
	info := -sentBytes(t, srv) + sentBytes(t, srv)
	for _, tt := range []struct {
		shown    int
		maxBytes int64
	}{{0, 256}, {20, 2 << 10}} {
		before := sentBytes(t, srv)
		reads, errs := protocol.ReadKeys(ctx, protocol.Scripts(c), []string{key}, protocol.ReadLimits{Waiters: tt.shown})
		sent := sentBytes(t, srv) - before - info
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		l := reads[0].Holder.Line
		t.Logf("%d waiters, %d listed: %d bytes sent", waiters, tt.shown, sent)
		switch {
		case l == nil || l.Count != waiters || len(l.Waiters) != tt.shown:
			t.Errorf("line %+v, want %d counted and %d listed", l, waiters, tt.shown)
		case !l.Oldest.Equal(time.UnixMicro(now - waiters)):
			t.Errorf("oldest %v, want %v", l.Oldest, time.UnixMicro(now-waiters))
		case sent > tt.maxBytes:
			t.Errorf("the server sent %d bytes, want at most %d", sent, tt.maxBytes)
		}
		if tt.shown > 0 && l != nil && len(l.Waiters) > 0 && l.Waiters[0].Identity != "w-00000:1" {
			t.Errorf("first waiter %q, want w-00000:1", l.Waiters[0].Identity)
		}
	}
}

// TestAnOlderReaderGetsTheReplyItAlwaysGot: a reader built before the
// waiting line (four keys, two arguments) calling this read, as it may
// call the library's function a newer build loaded, gets the reply it
// parses; and a read whose server runs the older function (no line in the
// reply) reads the holder, with no line.
func TestAnOlderReaderGetsTheReplyItAlwaysGot(t *testing.T) {
	s := newServer(t)
	takeLock(s, "old/reader")
	s.waitFor("old/reader", "waiter:1", 0)
	reply, err := s.r.Run(s.ctx, protocol.OldReadCall("old/reader", 16)).Slice()
	s.must(err)
	if len(reply) != 5 {
		t.Errorf("an older reader got %d items, want the 5 of a lock's reply: %v", len(reply), reply)
	}
	old := oldReplies{reply}
	reads, errs := protocol.ReadKeys(s.ctx, old, []string{"old/reader"}, protocol.ReadLimits{Waiters: 20})
	s.must(errs[0])
	if h := reads[0].Holder; !h.Held || h.Identity != "holder:1" || h.Line != nil {
		t.Errorf("read of the older reply: %+v, want held by holder:1 and no line", h)
	}
}

// oldReplies answers every call with one reply, as a server running the
// older function would.
type oldReplies struct{ reply []any }

func (o oldReplies) Run(ctx context.Context, _ protocol.Call) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetVal(o.reply)
	return cmd
}

func (o oldReplies) Pipelined(ctx context.Context, calls []protocol.Call) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = o.Run(ctx, c)
	}
	return cmds
}

// TestAControllerACLWithoutZCARDStillReadsTheHolder: a controller user
// created from the rules before the waiting line was read (no ZCARD)
// keeps reading holders; the line is not reported rather than the read
// failing.
func TestAControllerACLWithoutZCARDStillReadsTheHolder(t *testing.T) {
	srv := redistest.StartStandalone(t)
	s := &server{t: t, ctx: t.Context(), c: srv.Client(t)}
	s.r = protocol.Scripts(s.c)
	takeLock(s, "acl/old")
	s.waitFor("acl/old", "waiter:1", 0)
	if err := s.c.Do(s.ctx, "acl", "setuser", "old-controller", "on", ">pw", "~*", "resetchannels", "-@all",
		"+ping", "+evalsha", "+eval", "+get", "+type", "+pttl", "+time", "+zrangebyscore", "+hmget", "+hget").Err(); err != nil {
		t.Fatal(err)
	}
	c := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "old-controller", "pw" })
	reads, errs := protocol.ReadKeys(s.ctx, protocol.Scripts(c), []string{"acl/old"}, protocol.ReadLimits{Waiters: 20})
	s.must(errs[0])
	if h := reads[0].Holder; !h.Held || h.Identity != "holder:1" || h.Line != nil {
		t.Errorf("read: %+v, want held by holder:1 and no line", h)
	}
}

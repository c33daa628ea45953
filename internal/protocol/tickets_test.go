package protocol_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// ticketArgs are a waiter's acquire arguments, ordering the line by
// ticket or by the clock.
func ticketArgs(v string, tickets, queued bool) protocol.AcquireArgs {
	return protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: "waiter:1",
		Place: time.Minute, Queued: queued, Window: time.Second, LineFresh: queued, Tickets: tickets}
}

// join is one attempt of v's on the held key, which must fail: the
// counter its "not acquired" reply reports.
func (s *server) join(key, v string, tickets, queued bool) int64 {
	s.t.Helper()
	call := protocol.AcquireCall(key, ticketArgs(v, tickets, queued))
	res, err := ints(s.run(call.Script, call.Keys, call.Args...))
	s.must(err)
	expect(s.t, res[0], 0, "an attempt on a held key")
	return res[2]
}

// heldJob is a server on which holder:1 holds key "job", with its fence.
func heldJob(t *testing.T) (s *server, key, holder string, fence int64) {
	t.Helper()
	s, key, holder = newServer(t), "job", value(t, "holder:1")
	ok, fence := s.take(key, holder, false)
	s.took(ok, fence, "the holder")
	return s, key, holder, fence
}

// place is v's score in key's line.
func (s *server) place(key, v string) float64 {
	s.t.Helper()
	score, err := s.c.ZScore(s.ctx, protocol.LineKey(key), v).Result()
	s.must(err)
	return score
}

// Under ticket order a waiter's arrival is the next value of the key's
// counter: its first attempt runs INCR where the clock's order runs TIME
// and the counter's GET (one command less), its place is that ticket, and
// its "not acquired" reply reports the ticket as the counter it saw. No
// ticket repeats a fence or another ticket, and a hand-off after them
// counts above every one, so a waiter counts its lease from the hand-off
// as before (the strict-< rule, §10.1). A ticket that read the counter
// instead of incrementing it (the naive one) would equal the holder's
// fence and be seen again by the next waiter.
func TestTicketOrderQueuesByTheCounter(t *testing.T) {
	for _, tt := range []struct {
		name     string
		tickets  bool
		ran      []string
		skipped  []string
		commands int // the first attempt's, the script call left out
	}{
		{"clock", false, []string{"time", "get"}, []string{"incr"}, 7},
		{"tickets", true, []string{"incr"}, []string{"time", "get"}, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, key, _, fence := heldJob(t)
			waiters := []string{value(t, "a:1"), value(t, "b:1"), value(t, "c:1")}
			seen := []int64{}
			for i, v := range waiters {
				if i == 0 {
					s.must(s.c.ConfigResetStat(s.ctx).Err())
				}
				seen = append(seen, s.join(key, v, tt.tickets, false))
				if i == 0 {
					calls := s.commandCalls()
					total := 0
					for name, n := range calls {
						if name != "evalsha" && name != "fcall" && name != "config|resetstat" {
							total += n
						}
					}
					for _, c := range tt.ran {
						if calls[c] != 1 {
							t.Errorf("the first attempt ran %s %d times (ran %v)", c, calls[c], calls)
						}
					}
					for _, c := range tt.skipped {
						if calls[c] != 0 {
							t.Errorf("the first attempt ran %s %d times (ran %v)", c, calls[c], calls)
						}
					}
					expect(t, total, tt.commands, "commands of the first attempt")
				}
			}
			if !tt.tickets {
				for i := range waiters {
					expect(t, seen[i], fence, "the counter a clock waiter saw")
				}
				return
			}
			for i, v := range waiters {
				expect(t, seen[i], fence+int64(i)+1, "waiter "+string(rune('a'+i))+"'s ticket")
				expect(t, s.place(key, v), float64(seen[i]), "its place in line")
			}
			// The release hands the key to the first ticket, counted above
			// the last.
			// No waiter listens on its own channel: the message goes on the
			// events channel.
			ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(key))
			defer func() { _ = ps.Close() }()
			_, err := ps.Receive(s.ctx)
			s.must(err)
			expect(t, s.give(key, s.c.Get(s.ctx, key).Val(), time.Second), true, "the holder's release")
			received, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			msg, err := ps.ReceiveMessage(received)
			s.must(err)
			rest, ok := strings.CutPrefix(msg.Payload, "granted ")
			expect(t, ok, true, "a granted message: "+msg.Payload)
			g := protocol.ParseGrant(rest)
			expect(t, g.Counted, true, "the hand-off counted: "+msg.Payload)
			expect(t, g.Counter, seen[2]+1, "the hand-off's counter")
			expect(t, s.c.Get(s.ctx, key).Val(), waiters[0], "the key's holder: the first ticket")
			ok, f := s.take(key, waiters[0], true)
			s.took(ok, f, "the first ticket's confirming write")
		})
	}
}

// A waiter that queued by the clock before its lock switched to ticket
// order sits behind every ticket (a ticket is far below the clock): its
// next attempt with ticket order gives it a ticket then, so it is served
// before those who queue after that attempt, not after everyone who ever
// queues while it waits. Without it the clock waiter is served last here.
func TestAClockPlaceTakesATicketAfterTheSwitch(t *testing.T) {
	s, key, holder, _ := heldJob(t)
	before, early, late := value(t, "before:1"), value(t, "early:1"), value(t, "late:1")
	s.join(key, before, false, false)
	clock := s.place(key, before)
	s.join(key, early, true, false)
	if s.place(key, early) >= clock {
		t.Fatalf("a ticket %v is not below a clock arrival %v", s.place(key, early), clock)
	}
	seen := s.join(key, before, true, true)
	expect(t, s.place(key, before), float64(seen), "the clock waiter's place after its attempt with ticket order: its new ticket")
	s.join(key, late, true, false)
	s.handsOffInOrder(key, holder, "early:1", "before:1", "late:1")
}

// handsOffInOrder releases key from holder on, each release handing it to
// the next waiter, who confirms it (a fence above the last): the waiters
// must be the identities want, in that order.
func (s *server) handsOffInOrder(key, holder string, want ...string) {
	s.t.Helper()
	next := holder
	for i, w := range want {
		expect(s.t, s.give(key, next, time.Second), true, "a release")
		next = s.c.Get(s.ctx, key).Val()
		expect(s.t, protocol.IdentityFromValue(next), w, "hand-off "+string(rune('1'+i)))
		ok, f := s.take(key, next, true)
		s.took(ok, f, w)
	}
}

// A counter lost with the data (a server restarted empty, or the counter
// deleted) starts again at the server's clock in µs (lua/fence.lua's
// next_fence), so a ticket drawn after the loss lands above every ticket
// still in line, and every fence after it above every fence before. A
// counter that restarted at 1 would put the new waiter first.
func TestALostCounterTicketsAboveTheLine(t *testing.T) {
	s, key, holder, _ := heldJob(t)
	first := value(t, "first:1")
	ticket := s.join(key, first, true, false)
	s.must(s.c.Del(s.ctx, protocol.FenceKey(key)).Err())
	after := value(t, "after:1")
	reseeded := s.join(key, after, true, false)
	if reseeded <= ticket || reseeded < time.Now().Add(-time.Hour).UnixMicro() {
		t.Fatalf("the ticket after the loss is %d: not above the line's %d, or not the clock in µs", reseeded, ticket)
	}
	expect(t, s.give(key, holder, time.Second), true, "the holder's release")
	expect(t, s.c.Get(s.ctx, key).Val(), first, "the key's holder: the ticket from before the loss")
	ok, f := s.take(key, first, true)
	s.took(ok, f, "the first waiter")
}

// Inspect's read of a line by ticket: a ticket says where a waiter stands,
// not when it came, so such a waiter is listed with no arrival, and the
// oldest arrival is the oldest clock waiter's (none when every waiter has
// a ticket).
func TestTheReadListsTicketsWithoutArrivals(t *testing.T) {
	s, key, _, _ := heldJob(t)
	s.join(key, value(t, "ticket:1"), true, false)
	h, err := protocol.ReadHolderWaiters(s.ctx, s.r, key, 10)
	s.must(err)
	if h.Line == nil || h.Line.Count != 1 || !h.Line.Oldest.IsZero() || len(h.Line.Waiters) != 1 || !h.Line.Waiters[0].Since.IsZero() {
		t.Fatalf("line of one ticket = %+v, want one waiter with no arrival, no oldest", h.Line)
	}
	before := time.Now().Add(-time.Second)
	s.join(key, value(t, "clock:1"), false, false)
	h, err = protocol.ReadHolderWaiters(s.ctx, s.r, key, 10)
	s.must(err)
	l := h.Line
	if l == nil || l.Count != 2 || len(l.Waiters) != 2 || l.Waiters[0].Identity != "ticket:1" || !l.Waiters[0].Since.IsZero() ||
		l.Waiters[1].Identity != "clock:1" || l.Waiters[1].Since.Before(before) || !l.Oldest.Equal(l.Waiters[1].Since) {
		t.Fatalf("line of a ticket and a clock waiter = %+v, want the ticket first without arrival, the clock waiter's arrival the oldest", l)
	}
}

// Why ticket order waits until every client speaks protocol 7: a
// protocol-6 waiter queues by the clock, far above any ticket, so a
// protocol-7 waiter with ticket order that comes after it is served before
// it (asserted: the switch is what keeps it from happening, and
// docs/upgrading.md says when to turn it on). By the clock the two are
// served in arrival order. Either way each version counts the other's
// hand-off, and every fence is above the one before (mixedKey.take), for
// a lock and a semaphore.
func TestAProtocol6WaiterBehindTickets(t *testing.T) {
	for _, permits := range []int{0, 1} {
		for _, tickets := range []bool{false, true} {
			name := map[bool]string{true: "semaphore", false: "lock"}[permits > 0] + map[bool]string{true: ", tickets", false: ", clock"}[tickets]
			t.Run(name, func(t *testing.T) {
				s := newServer(t)
				m := &mixedKey{server: s, old: protocol6, key: "job", permits: permits, tickets: tickets}
				holder := value(t, "holder:1")
				expect(t, m.take(false, holder)[0], 1, "the holder")
				older, newer := value(t, "older:1"), value(t, "newer:1")
				expect(t, m.take(true, older)[0], 0, "protocol 6's waiter")
				expect(t, m.take(false, newer)[0], 0, "protocol 7's waiter, after it")
				want := []string{older, newer}
				if tickets {
					want = []string{newer, older}
				}
				expect(t, strings.Join(s.lineMembers(m), " "), strings.Join(want, " "), "the line")
				m.give(true, holder) // protocol 6's release hands the key to the first in line
				expect(t, m.take(want[0] == older, want[0])[0], 1, "the first in line's confirming write")
				m.give(false, want[0])
				expect(t, m.take(want[1] == older, want[1])[0], 1, "the second's confirming write")
			})
		}
	}
}

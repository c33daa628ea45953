package protocol_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// TestTrimmedCallsActLikeFullOnes: AcquireCall, Release and RenewCall
// leave out the trailing KEYS and ARGV that hold their defaults. For every
// combination of the options that decide what is left out, a trimmed call
// on one key and a full one (every key and argument, as clients sent them
// before) on another give the same replies and leave the same state, step
// by step: a free key taken, attempts on the held key (queued when they
// wait), an attempt after the key was freed behind its holder's back (with
// FIFO, the key goes to the head of the line instead), the epoch record
// lost, releases by the holder (a hand-off when someone waits), the
// waiters' next attempts (a confirming write by the one handed the key), a
// renewal after the epoch record was lost again, and a release by a value
// that holds nothing (it leaves the line); and they publish the same
// messages, on plain or sharded pub/sub. A script that read a left-out
// argument where it matters would fail here: a missing place, window or
// channel errors, a missing flag or cutoff changes a reply, the state or a
// message. Ticket order is one of the options: the two keys' counters
// start alike, so their tickets are alike too.
func TestTrimmedCallsActLikeFullOnes(t *testing.T) {
	s := newServer(t)
	plain := s.c.PSubscribe(s.ctx, "*")
	t.Cleanup(func() { _ = plain.Close() })
	quarantines := []protocol.Quarantine{{}, {On: true, Cutoff: time.Second}, {On: true, Cutoff: time.Second, MissingWaits: true}}
	for c := range len(quarantines) << 7 {
		bit := func(i int) bool { return c&(1<<i) != 0 }
		a := protocol.AcquireArgs{TTL: 10 * time.Second, Fencing: bit(0), Identity: "pod-a:1", Announce: bit(1),
			Queued: bit(2), FIFO: bit(3), Window: time.Second, Sharded: bit(4), Quarantine: quarantines[c>>7], Tickets: bit(6)}
		if bit(5) {
			a.Place = time.Minute
		}
		r := protocol.ReleaseArgs{Window: time.Second, Announce: a.Announce, Sharded: a.Sharded, TTL: a.TTL, Quarantine: a.Quarantine}
		name := fmt.Sprintf("fencing=%v announce=%v queued=%v fifo=%v sharded=%v place=%v tickets=%v quarantine=%+v",
			a.Fencing, a.Announce, a.Queued, a.FIFO, a.Sharded, a.Place, a.Tickets, a.Quarantine)
		trimmed, full := fmt.Sprintf("trimmed-%d", c), fmt.Sprintf("full-%d", c)
		// The same counter on both keys: the same fences.
		s.must(s.c.Set(s.ctx, protocol.FenceKey(trimmed), 1000, 0).Err())
		s.must(s.c.Set(s.ctx, protocol.FenceKey(full), 1000, 0).Err())
		heard := listen(t, s, plain, trimmed, full)
		if a.Quarantine.On { // the record of keys before their first use, as the controller writes it
			for _, key := range []string{trimmed, full} {
				_, err := protocol.RecordEpoch(s.ctx, s.r, key, a.TTL, protocol.Quarantine{On: true, Cutoff: a.Quarantine.Cutoff})
				s.must(err)
			}
		}

		take := func(value string) {
			t.Helper()
			a.Value = value
			got := acquireReply(s.r.Run(s.ctx, protocol.AcquireCall(trimmed, a)).Result())
			want := acquireReply(s.run(protocol.AcquireScript, protocol.AcquireKeys(full), a.Argv()...).Result())
			if got != want {
				t.Fatalf("%s: %s's attempt: trimmed %s, full %s", name, value, got, want)
			}
			sameState(t, s, name+": after "+value+"'s attempt", trimmed, full)
			heard.same(name + ": " + value + "'s attempt")
		}
		give := func(value string) {
			t.Helper()
			got := fmt.Sprint(s.r.Run(s.ctx, protocol.ReleaseCall(trimmed, value, r)).Result())
			want := fmt.Sprint(s.r.Run(s.ctx, protocol.FullReleaseCall(full, value, r)).Result())
			if got != want {
				t.Fatalf("%s: %s's release: trimmed %s, full %s", name, value, got, want)
			}
			sameState(t, s, name+": after "+value+"'s release", trimmed, full)
			heard.same(name + ": " + value + "'s release")
		}
		take("pod-a:1/a")
		take("pod-b:1/b")
		take("pod-c:1/c")
		s.must(s.c.Del(s.ctx, trimmed, full).Err())
		take("pod-d:1/d")
		// The epoch record lost (under a quarantine, the release that would
		// hand the key over finds it missing).
		s.must(s.c.Del(s.ctx, protocol.EpochKey(trimmed), protocol.EpochKey(full)).Err())
		give(holderValue(t, s, full))
		// The waiter the key was handed to tries again (a confirming
		// write when it says it may be queued), the others after it.
		for _, v := range []string{holderValue(t, s, full), "pod-b:1/b", "pod-c:1/c"} {
			if v != "" {
				take(v)
			}
		}
		// The holder renews, after its epoch record was lost again.
		s.must(s.c.Del(s.ctx, protocol.EpochKey(trimmed), protocol.EpochKey(full)).Err())
		if holder := holderValue(t, s, full); holder != "" {
			got := fmt.Sprint(s.r.Run(s.ctx, protocol.RenewCall(trimmed, holder, a.TTL, a.Quarantine)).Result())
			want := fmt.Sprint(s.run(protocol.RenewScript, protocol.RenewKeys(full), protocol.RenewArgv(holder, a.TTL, a.Quarantine)...).Result())
			if got != want {
				t.Fatalf("%s: %s's renewal: trimmed %s, full %s", name, holder, got, want)
			}
			sameState(t, s, name+": after "+holder+"'s renewal", trimmed, full)
		}
		give("pod-a:1/a")
		heard.close()
	}
}

// listener hears what the scripts publish about two keys: on plain pub/sub
// (every channel), and on sharded pub/sub (each key's events channel and
// its waiter channels).
type listener struct {
	t              *testing.T
	s              *server
	plain, sharded *redis.PubSub
	keys           [2]string
	marks          int
}

func listen(t *testing.T, s *server, plain *redis.PubSub, trimmed, full string) *listener {
	t.Helper()
	var channels []string
	for _, key := range []string{trimmed, full} {
		channels = append(channels, protocol.EventsChannel(key))
		for _, pod := range []string{"pod-a:1", "pod-b:1", "pod-c:1", "pod-d:1"} {
			channels = append(channels, protocol.WaiterChannel(key, pod))
		}
	}
	channels = append(channels, "mark")
	l := &listener{t: t, s: s, plain: plain, sharded: s.c.SSubscribe(s.ctx, channels...), keys: [2]string{trimmed, full}}
	for range channels {
		if _, err := l.sharded.Receive(s.ctx); err != nil { // the confirmations
			t.Fatal(err)
		}
	}
	return l
}

// same fails the test unless both keys had the same messages since the
// last look, their channels named without the key.
func (l *listener) same(what string) {
	l.t.Helper()
	var got [2][]string
	for _, ps := range []struct {
		name    string
		ps      *redis.PubSub
		publish func(ch, msg string) error
	}{
		{"plain", l.plain, func(ch, msg string) error { return l.s.c.Publish(l.s.ctx, ch, msg).Err() }},
		{"sharded", l.sharded, func(ch, msg string) error { return l.s.c.SPublish(l.s.ctx, ch, msg).Err() }},
	} {
		l.marks++
		mark := fmt.Sprint(l.marks)
		l.s.must(ps.publish("mark", mark))
		for {
			m, err := ps.ps.ReceiveMessage(l.s.ctx)
			l.s.must(err)
			if m.Channel == "mark" && m.Payload == mark {
				break
			}
			for i, key := range l.keys {
				if ch, ok := strings.CutPrefix(m.Channel, "{"+key+"}"); ok {
					got[i] = append(got[i], ps.name+" "+ch+" "+m.Payload)
				}
			}
		}
	}
	if !slices.Equal(got[0], got[1]) {
		l.t.Fatalf("%s: trimmed published %q, full %q", what, got[0], got[1])
	}
}

func (l *listener) close() { _ = l.sharded.Close() }

// acquireReply is an acquire's reply with the times in it (the holder's
// PTTL, a quarantine's ms left) reduced to their sign, or its error.
func acquireReply(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	reply := slices.Clone(v.([]any))
	if reply[0] == int64(0) {
		for _, i := range []int{1, 3} {
			if i < len(reply) {
				reply[i] = fmt.Sprintf("sign %d", max(-1, min(1, reply[i].(int64))))
			}
		}
	}
	return fmt.Sprint(reply)
}

// holderValue is the value holding key ("" when free).
func holderValue(t *testing.T, s *server, key string) string {
	t.Helper()
	v, _ := s.c.Get(s.ctx, key).Result()
	return v
}

// sameState fails t unless the two keys' state is the same: the holder
// and whether it expires, the fence counter, the line's waiters in order,
// and the epoch record's fields.
func sameState(t *testing.T, s *server, what, trimmed, full string) {
	t.Helper()
	state := func(key string) string {
		ttl := s.c.PTTL(s.ctx, key).Val() > 0
		line := s.c.ZRange(s.ctx, protocol.LineKey(key), 0, -1).Val()
		epoch := s.c.HKeys(s.ctx, protocol.EpochKey(key)).Val()
		slices.Sort(epoch)
		return fmt.Sprintf("holder %q expiring %v, counter %s, line %v, epoch record %v",
			holderValue(t, s, key), ttl, s.c.Get(s.ctx, protocol.FenceKey(key)).Val(), line, epoch)
	}
	if got, want := state(trimmed), state(full); got != want {
		t.Fatalf("%s: trimmed %s; full %s", what, got, want)
	}
}

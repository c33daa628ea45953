package protocol_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// permitArgs are a permit attempt's arguments: a waiter's (queued: value
// may be in the semaphore's line already) queuing for a minute, with a
// 300 ms hand-off window.
func permitArgs(value string, permits int, queued, fifo bool) protocol.AcquireArgs {
	return protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: protocol.IdentityFromValue(value),
		Place: time.Minute, Queued: queued, FIFO: fifo, Window: 300 * time.Millisecond, Permits: permits}
}

// permit runs the permit acquire script: acquired and the fence, or not
// and the ms until a permit frees.
func (s *server) permit(key, value string, permits int, queued bool) (bool, int64) {
	s.t.Helper()
	return s.permitWith(key, permitArgs(value, permits, queued, false))
}

func (s *server) permitWith(key string, args protocol.AcquireArgs) (bool, int64) {
	s.t.Helper()
	res, err := ints(s.run(protocol.AcquirePermitScript, protocol.AcquirePermitKeys(key), args.PermitArgv()...))
	s.must(err)
	return res[0] == 1, res[1]
}

func (s *server) givePermit(key, value string, permits int, window time.Duration) bool {
	s.t.Helper()
	ok, err := protocol.ReleasePermit(s.ctx, s.r, key, value, permits, protocol.ReleaseArgs{Window: window})
	s.must(err)
	return ok
}

func (s *server) renewPermit(key, value string) bool {
	s.t.Helper()
	n, err := s.run(protocol.RenewPermitScript, protocol.RenewPermitKeys(key), value, 10000).Int()
	s.must(err)
	return n == 1
}

func (s *server) permits(key string) protocol.Permits {
	s.t.Helper()
	p, err := protocol.ReadPermits(s.ctx, s.r, key, 0)
	s.must(err)
	return p
}

// identities are the holders of p, soonest to expire first, with "?" after
// a pending one.
func identities(p protocol.Permits) []string {
	var out []string
	for _, h := range p.Holders {
		id := h.Identity
		if !h.Confirmed {
			id += "?"
		}
		out = append(out, id)
	}
	return out
}

func expectHolders(t *testing.T, p protocol.Permits, want ...string) {
	t.Helper()
	if got := identities(p); !slices.Equal(got, want) {
		t.Fatalf("holders %q, want %q", got, want)
	}
}

// The holder set on one server: permits are given while fewer than the
// caller's count are held, each with a fence above all before; a refused
// attempt learns when one frees by expiry and queues; a value that holds
// no permit frees nothing; a release hands its permit to the first waiter
// for the window only and says so by digest; everything expires with the
// last permit.
func TestPermitsOnTheServer(t *testing.T) {
	s := newServer(t)
	const key = "sem"
	a, b, w1, w2 := value(t, "a:1"), value(t, "b:1"), value(t, "w1:1"), value(t, "w2:1")
	ok, f := s.permit(key, a, 2, false)
	s.took(ok, f, "a")
	ok, f = s.permit(key, b, 2, false)
	s.took(ok, f, "b")
	for _, v := range []string{w1, w2} {
		ok, ms := s.permit(key, v, 2, false)
		expect(t, ok, false, "a third permit")
		if ms <= 9000 || ms > 10000 {
			t.Fatalf("a refused attempt learns a permit frees in %d ms, want about 10 s", ms)
		}
	}
	p := s.permits(key)
	expectHolders(t, p, "a:1", "b:1")
	expect(t, int64(p.Fence), s.lastFence, "the fence counter") //nolint:gosec // G115: a fence is below 2^53
	if since := time.Since(p.Holders[0].Since); since < 0 || since > 5*time.Second {
		t.Fatalf("a's permit since %v ago", since)
	}
	expect(t, s.c.ZCard(s.ctx, protocol.PermitLineKey(key)).Val(), 2, "places in the semaphore's line")

	expect(t, s.givePermit(key, value(t, "stranger:1"), 2, time.Second), false, "a stranger's release")
	ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	_, err := ps.Receive(s.ctx)
	s.must(err)
	expect(t, s.givePermit(key, a, 2, 300*time.Millisecond), true, "a's release")
	msg, err := ps.ReceiveMessage(s.ctx)
	s.must(err)
	expect(t, msg.Payload, "granted "+protocol.ValueDigest(w1)+" "+protocol.ValueDigest(w2)+" "+s.counter(key)+" 300 h"+s.history()+" 2",
		"message (the chosen waiter, then the one now first, the hand-off's counter, expiry and live permits)")
	p = s.permits(key)
	// Protocol 4: the hand-off assigned the permit its fence (the counter).
	expectHolders(t, p, "w1:1", "b:1")
	if p.Holders[0].TTL > 300*time.Millisecond {
		t.Fatalf("the handed permit lives %v, want the 300ms window", p.Holders[0].TTL)
	}
	expect(t, s.givePermit(key, a, 2, time.Second), false, "a's second release")
	ok, _ = s.permit(key, value(t, "late:1"), 2, false)
	expect(t, ok, false, "a newcomer's attempt on a permit handed to a waiter")
	ok, f = s.permit(key, w1, 2, true)
	s.took(ok, f, "w1, confirming")
	expectHolders(t, s.permits(key), "b:1", "w1:1")

	// Unconfirmed, a hand-off runs out with its window.
	expect(t, s.givePermit(key, b, 2, 300*time.Millisecond), true, "b's release")
	time.Sleep(400 * time.Millisecond)
	expectHolders(t, s.permits(key), "w1:1")
	ok, f = s.permit(key, w2, 2, true)
	s.took(ok, f, "the next caller, on the permit the window freed")
	for _, k := range []string{key, protocol.HoldersKey(key)} {
		if pttl := s.c.PTTL(s.ctx, k).Val(); pttl <= 9*time.Second || pttl > 10*time.Second {
			t.Fatalf("%s's PTTL %v, want the last permit's", k, pttl)
		}
	}
}

// A permit is renewed only while live: an expired one, still in the set
// because no script ran since, is not revived.
func TestAnExpiredPermitIsNotRenewed(t *testing.T) {
	s := newServer(t)
	v, other := value(t, "a:1"), value(t, "b:1")
	ok, _ := s.permit("sem", v, 2, false)
	expect(t, ok, true, "a permit")
	expect(t, s.renewPermit("sem", v), true, "renewal of a live permit")
	ok, _ = s.permit("sem", other, 2, false)
	expect(t, ok, true, "another permit")
	s.c.ZAdd(s.ctx, "sem", redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: v}) // v expired
	expect(t, s.renewPermit("sem", v), false, "renewal of an expired permit")
}

// A key is a lock or a semaphore: a lock's key refuses permits (the
// attempt queues in the semaphore's own line and learns the lock's PTTL),
// and a semaphore with a live permit refuses the lock, whatever the count.
// A DistributedLock whose permits change between 1 and more is then never
// held by both kinds at once.
func TestLocksAndSemaphoresOnOneKeyExcludeEachOther(t *testing.T) {
	s := newServer(t)
	const key = "both"
	holder := value(t, "lock:1")
	ok, _ := s.take(key, holder, false)
	expect(t, ok, true, "lock acquire")
	ok, ms := s.permit(key, value(t, "sem:1"), 5, false)
	expect(t, ok, false, "a permit on a locked key")
	if ms <= 9000 {
		t.Fatalf("a permit attempt on a locked key learns %d ms, want the lock's PTTL", ms)
	}
	expect(t, s.c.ZCard(s.ctx, protocol.LineKey(key)).Val(), 0, "permit waiters in the lock's line")
	if _, err := protocol.ReadPermits(s.ctx, s.r, key, 0); err == nil {
		t.Fatal("reading a lock as a semaphore succeeded")
	}
	expect(t, s.give(key, holder, time.Second), true, "lock release")
	ok, _ = s.permit(key, value(t, "sem:2"), 5, false)
	expect(t, ok, true, "a permit on a free key")
	ok, _ = s.take(key, value(t, "lock:2"), false)
	expect(t, ok, false, "lock acquire with a permit held")
}

// A waiter handed a permit by a releaser that allows more permits than it
// does (the count was lowered) gives it back while the others hold its
// count, and goes back to the head of the line.
func TestAHandOffAboveTheWaitersCountIsGivenBack(t *testing.T) {
	s := newServer(t)
	const key = "lowered"
	holders := []string{value(t, "h:1"), value(t, "h:2"), value(t, "h:3")}
	for _, v := range holders {
		ok, _ := s.permit(key, v, 3, false)
		expect(t, ok, true, "a permit of 3")
	}
	w, behind := value(t, "w:1"), value(t, "w:2")
	for _, v := range []string{w, behind} {
		ok, _ := s.permit(key, v, 2, false)
		expect(t, ok, false, "a permit above the lowered count")
	}
	// A holder still at 3 releases: the others are 2, as many as w allows.
	expect(t, s.givePermit(key, holders[0], 3, time.Second), true, "release")
	ok, _ := s.permit(key, w, 2, true)
	expect(t, ok, false, "the waiter's confirmation of a third permit at a count of 2")
	got := s.c.ZRange(s.ctx, protocol.PermitLineKey(key), 0, -1).Val()
	expect(t, len(got), 2, "places in line after the refusal")
	expect(t, got[0], w, "the head of the line after the refusal")
	expectHolders(t, s.permits(key), "h:2", "h:3")
	// The next release, by a holder at 2 now, leaves one: it hands one
	// permit, to w, which takes it.
	expect(t, s.givePermit(key, holders[1], 2, time.Second), true, "release")
	ok, _ = s.permit(key, w, 2, true)
	expect(t, ok, true, "the waiter's confirmation under its count")
}

// A permit freed by expiry, with waiters in line: by default it goes to
// whoever asks first; with FIFO it goes to the head of the line, and the
// caller queues behind.
func TestAFreePermitGoesToTheHeadOnlyWithFIFO(t *testing.T) {
	s := newServer(t)
	for _, tt := range []struct {
		name string
		fifo bool
		want string
	}{{"default", false, "caller:1"}, {"FIFO", true, "head:1"}} {
		t.Run(tt.name, func(t *testing.T) {
			key := "expired-permit-" + tt.name
			ok, _ := s.permit(key, value(t, "dead:1"), 1, false)
			expect(t, ok, true, "a permit")
			ok, _ = s.permit(key, value(t, "head:1"), 1, false)
			expect(t, ok, false, "a second permit of one")
			s.c.Del(s.ctx, key, protocol.HoldersKey(key)) // the holder's permit expired
			ok, _ = s.permitWith(key, permitArgs(value(t, "caller:1"), 1, false, tt.fifo))
			expect(t, ok, !tt.fifo, "the caller's attempt")
			expectHolders(t, s.permits(key), tt.want)
		})
	}
}

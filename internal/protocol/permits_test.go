package protocol_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// permit runs the permit acquire script: queued says value may be in the
// semaphore's line (a waiter's later attempt); waiters queue for a minute.
func permit(ctx context.Context, t *testing.T, c *redis.Client, key, value string, permits int, queued bool) (acquired bool, n int64) {
	t.Helper()
	args := protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: protocol.IdentityFromValue(value),
		Place: time.Minute, Queued: queued, Window: 300 * time.Millisecond, Permits: permits}
	res, err := protocol.AcquirePermitScript.Run(ctx, c, protocol.AcquirePermitKeys(key), args.PermitArgv()...).Int64Slice()
	if err != nil {
		t.Fatalf("permit acquire: %v", err)
	}
	return res[0] == 1, res[1]
}

func held(ctx context.Context, t *testing.T, c *redis.Client, key string) protocol.Permits {
	t.Helper()
	p, err := protocol.ReadPermits(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The holder set on one server: permits are given while fewer than the
// caller's count are held, each with a fence above all before; a refused
// attempt learns when one frees by expiry and queues; a release hands its
// permit to the first waiter for the window only and says so by digest; a
// value that holds no permit frees nothing; everything expires with the
// last permit.
func TestPermitsOnTheServer(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key = "sem"
	a, b, w1, w2 := value(t, "a:1"), value(t, "b:1"), value(t, "w1:1"), value(t, "w2:1")
	var last int64
	for _, v := range []string{a, b} {
		ok, f := permit(ctx, t, c, key, v, 2, false)
		if !ok || f <= last {
			t.Fatalf("permit for %s = %v, fence %d (last %d)", protocol.IdentityFromValue(v), ok, f, last)
		}
		last = f
	}
	for _, v := range []string{w1, w2} {
		if ok, ms := permit(ctx, t, c, key, v, 2, false); ok || ms <= 9000 || ms > 10000 {
			t.Fatalf("third permit = %v, %d ms; want refused, a permit free by expiry in about 10 s", ok, ms)
		}
	}
	p := held(ctx, t, c, key)
	if len(p.Holders) != 2 || !p.Holders[0].Confirmed || p.Holders[0].Identity != "a:1" || p.Fence != uint64(last) {
		t.Fatalf("holders %+v, fence %d; want a and b confirmed, the counter at %d", p.Holders, p.Fence, last)
	}
	if since := time.Since(p.Holders[0].Since); since < 0 || since > 5*time.Second {
		t.Fatalf("a's permit since %v ago", since)
	}
	if n := c.ZCard(ctx, protocol.PermitLineKey(key)).Val(); n != 2 {
		t.Fatalf("the line holds %d, want the 2 refused", n)
	}

	// A value that holds nothing frees nothing (and leaves the line).
	if ok, err := protocol.ReleasePermit(ctx, c, key, value(t, "stranger:1"), 2, time.Second, false); err != nil || ok {
		t.Fatalf("a stranger's release = %v, %v", ok, err)
	}
	ps := c.Subscribe(ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := protocol.ReleasePermit(ctx, c, key, a, 2, 300*time.Millisecond, false); err != nil || !ok {
		t.Fatalf("a's release = %v, %v", ok, err)
	}
	msg, err := ps.ReceiveMessage(ctx)
	if want := "granted " + protocol.ValueDigest(w1) + " " + protocol.ValueDigest(w2); err != nil || msg.Payload != want {
		t.Fatalf("message = %v, %v; want %q", msg, err, want)
	}
	p = held(ctx, t, c, key)
	if len(p.Holders) != 2 || p.Holders[0].Confirmed || p.Holders[0].Identity != "w1:1" || p.Holders[0].TTL > 300*time.Millisecond {
		t.Fatalf("holders after the release %+v; want w1 handed a permit for the 300ms window", p.Holders)
	}
	// Released twice: nothing more is freed.
	if ok, err := protocol.ReleasePermit(ctx, c, key, a, 2, time.Second, false); err != nil || ok {
		t.Fatalf("a's second release = %v, %v", ok, err)
	}
	if ok, _ := permit(ctx, t, c, key, value(t, "late:1"), 2, false); ok {
		t.Fatal("a newcomer took a permit handed to the waiter")
	}
	ok, f := permit(ctx, t, c, key, w1, 2, true)
	if !ok || f <= last {
		t.Fatalf("w1's confirmation = %v, fence %d (last %d)", ok, f, last)
	}
	if p = held(ctx, t, c, key); !p.Holders[1].Confirmed || p.Holders[1].TTL < 9*time.Second {
		t.Fatalf("w1 after confirming: %+v; want its permit for the 10s TTL", p.Holders[1])
	}

	// Unconfirmed, a hand-off runs out with its window.
	if ok, err := protocol.ReleasePermit(ctx, c, key, b, 2, 300*time.Millisecond, false); err != nil || !ok {
		t.Fatalf("b's release = %v, %v", ok, err)
	}
	time.Sleep(400 * time.Millisecond)
	if p = held(ctx, t, c, key); len(p.Holders) != 1 {
		t.Fatalf("%d live permits after the unconfirmed hand-off's window, want w1's only", len(p.Holders))
	}
	if ok, _ := permit(ctx, t, c, key, w2, 2, true); !ok {
		t.Fatal("the permit freed by the window did not go to the next caller")
	}
	for _, k := range []string{key, protocol.HoldersKey(key)} {
		if pttl := c.PTTL(ctx, k).Val(); pttl <= 9*time.Second || pttl > 10*time.Second {
			t.Fatalf("%s's PTTL %v, want the last permit's", k, pttl)
		}
	}
}

// A permit is renewed only while live: an expired one, still in the set
// because no script ran since, is not revived.
func TestAnExpiredPermitIsNotRenewed(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	v := value(t, "a:1")
	args := protocol.AcquireArgs{Value: v, TTL: 100 * time.Millisecond, Fencing: true, Identity: "a:1", Permits: 1}
	if err := protocol.AcquirePermitScript.Run(ctx, c, protocol.AcquirePermitKeys("sem"), args.PermitArgv()...).Err(); err != nil {
		t.Fatal(err)
	}
	renew := func() int64 {
		return protocol.RenewPermitScript.Run(ctx, c, protocol.RenewPermitKeys("sem"), v, 10000).Val().(int64)
	}
	if n := renew(); n != 1 {
		t.Fatalf("renewal of a live permit = %d", n)
	}
	// Keep the set alive past the permit's expiry with another permit.
	other := value(t, "b:1")
	args.Value, args.TTL = other, 10*time.Second
	if err := protocol.AcquirePermitScript.Run(ctx, c, protocol.AcquirePermitKeys("sem"), args.PermitArgv()...).Err(); err != nil {
		t.Fatal(err)
	}
	c.ZAdd(ctx, "sem", redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: v}) // v expired
	if n := renew(); n != 0 {
		t.Fatalf("renewal of an expired permit = %d, want 0", n)
	}
}

// A key is a lock or a semaphore: a lock's key refuses permits (the
// attempt queues in the semaphore's own line and learns the lock's PTTL),
// and a semaphore with a live permit refuses the lock, whatever the count.
// A DistributedLock whose permits change between 1 and more is then never
// held by both kinds at once.
func TestLocksAndSemaphoresOnOneKeyExcludeEachOther(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key = "both"
	holder := value(t, "lock:1")
	if ok, _, err := take(ctx, c, key, holder, false); err != nil || !ok {
		t.Fatalf("lock acquire = %v, %v", ok, err)
	}
	if ok, ms := permit(ctx, t, c, key, value(t, "sem:1"), 5, false); ok || ms <= 9000 {
		t.Fatalf("permit on a locked key = %v, %d ms; want refused with the lock's PTTL", ok, ms)
	}
	if n := c.ZCard(ctx, protocol.LineKey(key)).Val(); n != 0 {
		t.Fatalf("a permit waiter queued in the lock's line (%d)", n)
	}
	if _, err := protocol.ReadPermits(ctx, c, key); err == nil {
		t.Fatal("reading a lock as a semaphore succeeded")
	}
	if ok, err := protocol.Release(ctx, c, key, holder, time.Second, false); err != nil || !ok {
		t.Fatalf("lock release = %v, %v", ok, err)
	}
	if ok, _ := permit(ctx, t, c, key, value(t, "sem:2"), 5, false); !ok {
		t.Fatal("permit on a free key refused")
	}
	if ok, _, err := take(ctx, c, key, value(t, "lock:2"), false); err != nil || ok {
		t.Fatalf("lock acquire with a permit held = %v, %v", ok, err)
	}
}

// A waiter handed a permit by a releaser that allows more permits than it
// does (the count was lowered) gives it back while the others hold its
// count, and goes back to the head of the line.
func TestAHandOffAboveTheWaitersCountIsGivenBack(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key = "lowered"
	holders := []string{value(t, "h:1"), value(t, "h:2"), value(t, "h:3")}
	for _, v := range holders {
		if ok, _ := permit(ctx, t, c, key, v, 3, false); !ok {
			t.Fatal("permit refused")
		}
	}
	w, behind := value(t, "w:1"), value(t, "w:2")
	for _, v := range []string{w, behind} {
		if ok, _ := permit(ctx, t, c, key, v, 2, false); ok {
			t.Fatal("permit above the lowered count given")
		}
	}
	// A holder still at 3 releases: the count of the others is 2 and the
	// hand-off goes to w, which allows 2.
	if ok, err := protocol.ReleasePermit(ctx, c, key, holders[0], 3, time.Second, false); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	if ok, _ := permit(ctx, t, c, key, w, 2, true); ok {
		t.Fatal("the waiter took a third permit where it allows 2")
	}
	if got := c.ZRange(ctx, protocol.PermitLineKey(key), 0, -1).Val(); len(got) != 2 || got[0] != w {
		t.Fatalf("the line after the refusal has %d places, head %q; want w back at the head", len(got), protocol.IdentityFromValue(got[0]))
	}
	if p := held(ctx, t, c, key); len(p.Holders) != 2 {
		t.Fatalf("%d permits held, want the 2 left", len(p.Holders))
	}
	// The next release, by a holder at 2 now, leaves one: it hands one
	// permit, to w, which takes it.
	if ok, err := protocol.ReleasePermit(ctx, c, key, holders[1], 2, time.Second, false); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	if ok, _ := permit(ctx, t, c, key, w, 2, true); !ok {
		t.Fatal("the waiter refused a permit under its count")
	}
}

// A permit freed by expiry, with waiters in line: by default it goes to
// whoever asks first; with FIFO it goes to the head of the line, and the
// caller queues behind.
func TestAFreePermitGoesToTheHeadOnlyWithFIFO(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	for _, fifo := range []bool{false, true} {
		key := "expired-permit-" + map[bool]string{false: "default", true: "FIFO"}[fifo]
		if ok, _ := permit(ctx, t, c, key, value(t, "dead:1"), 1, false); !ok {
			t.Fatal("permit refused")
		}
		head := value(t, "head:1")
		if ok, _ := permit(ctx, t, c, key, head, 1, false); ok {
			t.Fatal("a second permit of one given")
		}
		c.Del(ctx, key, protocol.HoldersKey(key)) // the holder's permit expired
		args := protocol.AcquireArgs{Value: value(t, "caller:1"), TTL: 10 * time.Second, Fencing: true, Identity: "caller:1",
			Place: time.Minute, FIFO: fifo, Window: time.Second, Permits: 1}
		res, err := protocol.AcquirePermitScript.Run(ctx, c, protocol.AcquirePermitKeys(key), args.PermitArgv()...).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		p := held(ctx, t, c, key)
		switch {
		case fifo && (res[0] == 1 || len(p.Holders) != 1 || p.Holders[0].Identity != "head:1" || p.Holders[0].Confirmed):
			t.Fatalf("FIFO: the caller's attempt = %v, holders %+v; want the permit handed to the head", res, p.Holders)
		case !fifo && (res[0] != 1 || len(p.Holders) != 1 || p.Holders[0].Identity != "caller:1"):
			t.Fatalf("default: the caller's attempt = %v, holders %+v; want the caller to take it", res, p.Holders)
		}
	}
}

package protocol_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// v1 are the protocol-1 scripts as released (testdata/v1): what a client
// not yet upgraded runs during a rolling upgrade.
type v1 struct{ acquire, release *redis.Script }

func loadV1(t *testing.T) v1 {
	t.Helper()
	read := func(name string) *redis.Script {
		src, err := os.ReadFile("testdata/v1/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return redis.NewScript(string(src))
	}
	return v1{read("acquire.lua"), read("release.lua")}
}

func (o v1) take(ctx context.Context, c *redis.Client, key, value string) (acquired bool, fence int64, err error) {
	res, err := o.acquire.Run(ctx, c, []string{key, protocol.FenceKey(key), protocol.EventsChannel(key)},
		value, 10000, "1", "old-pod:1").Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return res[0] == 1, res[1], nil
}

func (o v1) give(ctx context.Context, c *redis.Client, key, value string) (bool, error) {
	n, err := o.release.Run(ctx, c, []string{key, protocol.EventsChannel(key)}, value).Int64()
	return n == 1, err
}

// take runs the protocol-2 acquire script for a waiter (it queues when the
// key is held).
func take(ctx context.Context, c *redis.Client, key, value string, queued bool) (acquired bool, fence int64, err error) {
	args := protocol.AcquireArgs{Value: value, TTL: 10 * time.Second, Fencing: true, Identity: "new-pod:1",
		Place: time.Minute, Queued: queued, Window: time.Second}
	res, err := protocol.AcquireScript.Run(ctx, c, protocol.AcquireKeys(key), args.Argv()...).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return res[0] == 1, res[1], nil
}

func value(t *testing.T, identity string) string {
	t.Helper()
	v, err := protocol.NewValue(identity)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Old and new clients side by side on one server during a rolling upgrade
// (docs/protocol.md, "Changing the protocol"): a new client never takes a
// key an old client holds, an old client never takes a key a release handed
// to a new waiter, every fence is above the one before whoever hands it
// out, each names the other as holder, and an old release (which knows no
// line) still lets a queued new waiter in.
func TestProtocol1And2SideBySide(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key = "upgrade"
	old := loadV1(t)
	var last int64
	fenceAbove := func(f int64, who string) {
		t.Helper()
		if f <= last {
			t.Fatalf("%s got fence %d, not above %d", who, f, last)
		}
		last = f
	}

	// An old client holds; a new one is refused and queues.
	oldValue := value(t, "old-pod:1")
	ok, f, err := old.take(ctx, c, key, oldValue)
	if err != nil || !ok {
		t.Fatalf("old acquire = %v, %v", ok, err)
	}
	fenceAbove(f, "the old client")
	newValue := value(t, "new-pod:1")
	if ok, _, err := take(ctx, c, key, newValue, false); err != nil || ok {
		t.Fatalf("new acquire of a key an old client holds = %v, %v", ok, err)
	}
	if h, err := protocol.ReadHolder(ctx, c, key); err != nil || h.Identity != "old-pod:1" {
		t.Fatalf("holder = %+v, %v; want the old client", h, err)
	}
	// The old release knows no line: it deletes the key and says
	// "released"; the queued new waiter's next attempt takes it.
	if ok, err := old.give(ctx, c, key, oldValue); err != nil || !ok {
		t.Fatalf("old release = %v, %v", ok, err)
	}
	ok, f, err = take(ctx, c, key, newValue, true)
	if err != nil || !ok {
		t.Fatalf("queued new waiter after an old release = %v, %v", ok, err)
	}
	fenceAbove(f, "the new client")
	if n := c.ZCard(ctx, protocol.LineKey(key)).Val(); n != 0 {
		t.Fatalf("the line still holds %d places after its only waiter took the key", n)
	}

	// A second new client queues; the release hands it the key. An old
	// client, arriving in between, is refused: the key is the waiter's.
	waiter := value(t, "new-pod:2")
	if ok, _, err := take(ctx, c, key, waiter, false); err != nil || ok {
		t.Fatalf("second new acquire = %v, %v", ok, err)
	}
	if ok, err := protocol.Release(ctx, c, key, newValue, time.Second, false); err != nil || !ok {
		t.Fatalf("new release = %v, %v", ok, err)
	}
	if ok, _, err := old.take(ctx, c, key, value(t, "old-pod:2")); err != nil || ok {
		t.Fatalf("old acquire of a key handed to a waiter = %v, %v", ok, err)
	}
	if h, err := protocol.ReadHolder(ctx, c, key); err != nil || h.Identity != "new-pod:2" {
		t.Fatalf("holder after the hand-off = %+v, %v; want the waiter it was handed to", h, err)
	}
	// An old release with its own (stale) value cannot delete it.
	if ok, err := old.give(ctx, c, key, oldValue); err != nil || ok {
		t.Fatalf("old release of a key it no longer holds = %v, %v", ok, err)
	}
	ok, f, err = take(ctx, c, key, waiter, true)
	if err != nil || !ok {
		t.Fatalf("the waiter's confirmation = %v, %v", ok, err)
	}
	fenceAbove(f, "the waiter")
	if ok, err := protocol.Release(ctx, c, key, waiter, time.Second, false); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	// Free again: the old client takes it with a fence above them all.
	ok, f, err = old.take(ctx, c, key, value(t, "old-pod:3"))
	if err != nil || !ok {
		t.Fatalf("old acquire of a free key = %v, %v", ok, err)
	}
	fenceAbove(f, "the old client")
}

// The waiting line's rules on one server: a release takes the first
// waiter off the line and hands it the key for the hand-off window only,
// until it confirms; a waiter that leaves (a release with a value that
// does not hold the key) loses its place.
func TestTheLineOnTheServer(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
	const key = "line"
	holder := value(t, "holder:1")
	if ok, _, err := take(ctx, c, key, holder, false); err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	quitter, next, last := value(t, "quitter:1"), value(t, "next:1"), value(t, "last:1")
	for _, v := range []string{quitter, next, last} {
		if ok, _, err := take(ctx, c, key, v, false); err != nil || ok {
			t.Fatalf("acquire of a held key = %v, %v", ok, err)
		}
	}
	if ok, err := protocol.Release(ctx, c, key, quitter, time.Second, false); err != nil || ok {
		t.Fatalf("a waiter leaving = %v, %v; want false (it held nothing)", ok, err)
	}
	ps := c.Subscribe(ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := protocol.Release(ctx, c, key, holder, 300*time.Millisecond, false); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	if got := c.Get(ctx, key).Val(); got != next {
		t.Fatalf("the release handed the key to %q, want the first waiter still in line", protocol.IdentityFromValue(got))
	}
	msg, err := ps.ReceiveMessage(ctx)
	if want := "granted " + protocol.ValueDigest(next) + " " + protocol.ValueDigest(last); err != nil || msg.Payload != want {
		t.Fatalf("message = %v, %v; want %q (the chosen waiter, then the one now first)", msg, err, want)
	}
	if pttl := c.PTTL(ctx, key).Val(); pttl > 300*time.Millisecond || pttl <= 0 {
		t.Fatalf("the handed key's PTTL is %v, want the 300ms window", pttl)
	}
	if got := c.ZRange(ctx, protocol.LineKey(key), 0, -1).Val(); len(got) != 1 || got[0] != last {
		t.Fatalf("the line holds %d places, want only the last waiter's", len(got))
	}
	// Unconfirmed, the hand-off runs out and the key is free.
	time.Sleep(400 * time.Millisecond)
	if n := c.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("an unconfirmed hand-off outlived its window")
	}
	if ok, _, err := take(ctx, c, key, next, true); err != nil || !ok {
		t.Fatalf("acquire of the free key = %v, %v", ok, err)
	}
	if pttl := c.PTTL(ctx, key).Val(); pttl < 9*time.Second {
		t.Fatalf("PTTL after the acquisition = %v, want the 10s TTL", pttl)
	}
}

// A key freed by expiry, with waiters in line: by default it goes to
// whoever asks first; with FIFO it goes to the head of the line, and the
// caller queues behind.
func TestAFreeKeyGoesToTheHeadOnlyWithFIFO(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	ctx := t.Context()
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
			if ok, _, err := take(ctx, c, key, head, false); err != nil || ok {
				t.Fatalf("acquire of a held key = %v, %v", ok, err)
			}
			c.Del(ctx, key) // the holder's key expired
			caller := value(t, "caller:1")
			args := protocol.AcquireArgs{Value: caller, TTL: 10 * time.Second, Fencing: true, Identity: "caller:1",
				Place: time.Minute, FIFO: tt.fifo, Window: time.Second}
			res, err := protocol.AcquireScript.Run(ctx, c, protocol.AcquireKeys(key), args.Argv()...).Int64Slice()
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

package protocol_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// takeFenced acquires key for value with fencing for ttl: its fence, or 0 when
// not acquired.
func (s *server) takeFenced(key, value string, ttl time.Duration) uint64 {
	s.t.Helper()
	res, err := ints(s.r.Run(s.ctx, protocol.AcquireCall(key, protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: protocol.IdentityFromValue(value)})))
	s.must(err)
	if res[0] != 1 || res[1] < 0 {
		return 0
	}
	return uint64(res[1]) //nolint:gosec // G115: checked non-negative above
}

func (s *server) value(identity string) string {
	s.t.Helper()
	v, err := protocol.NewValue(identity)
	s.must(err)
	return v
}

// TestRevokeKeepsTheTTLAndLocksEveryoneOut: a revoke replaces the holder's
// value with a tombstone and keeps the key's PTTL (a DEL, or a SET that
// reset the expiry, would fail it): the holder's renewal and release find
// another value, nobody acquires before the PTTL ran out, readers name the
// tombstone, and after the expiry the next holder takes a greater fence.
func TestRevokeKeepsTheTTLAndLocksEveryoneOut(t *testing.T) {
	s := newServer(t)
	const key, ttl = "revoked", 1500 * time.Millisecond
	holder := s.value("stuck-pod:1")
	fence := s.takeFenced(key, holder, ttl)
	if fence == 0 {
		t.Fatal("the holder did not acquire")
	}
	before := s.c.PTTL(s.ctx, key).Val()
	b, err := protocol.Revoke(s.ctx, s.r, key, protocol.BreakGlassArgs{Identity: "stuck-pod:1", Fence: fence, FenceSet: true, By: "alice@example.com"})
	s.must(err)
	if !b.Done || b.Identity != "stuck-pod:1" || b.Fence != fence || b.TTL <= 0 || b.TTL > before {
		t.Fatalf("revoke = %+v, want done for stuck-pod:1 fence %d with a PTTL up to %v", b, fence, before)
	}
	after := s.c.PTTL(s.ctx, key).Val()
	if after > before || before-after > 200*time.Millisecond {
		t.Fatalf("PTTL %v after the revoke, %v before: want it kept", after, before)
	}
	if n, err := s.r.Run(s.ctx, protocol.RenewCall(key, holder, ttl, protocol.Quarantine{})).Int(); err != nil || n != 0 {
		t.Fatalf("the revoked holder's renewal = %d, %v; want 0", n, err)
	}
	if ok, err := protocol.Release(s.ctx, s.r, key, holder, protocol.ReleaseArgs{Window: time.Second}); err != nil || ok {
		t.Fatalf("the revoked holder's release = %v, %v; want a no-op", ok, err)
	}
	h, err := protocol.ReadHolder(s.ctx, s.r, key)
	s.must(err)
	if !h.Held || h.Identity != "revoked-by-alice@example.com" || !protocol.IsTombstone(h.Identity) {
		t.Fatalf("read after the revoke: %+v, want held by the tombstone", h)
	}
	next := s.value("next-pod:1")
	for {
		pttl := s.c.PTTL(s.ctx, key).Val()
		f := s.takeFenced(key, next, ttl)
		if f != 0 {
			if pttl > 20*time.Millisecond {
				t.Fatalf("acquired with %v of the revoked key's PTTL left", pttl)
			}
			if f <= fence {
				t.Fatalf("next fence %d, the revoked holder's %d: want greater", f, fence)
			}
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestRevokeWithAStaleHolderChangesNothing: a revoke naming another
// identity or a fence the holder no longer has, a semaphore, a free key,
// a tombstone: nothing changes, and the holder still renews.
func TestRevokeWithAStaleHolderChangesNothing(t *testing.T) {
	s := newServer(t)
	const key = "stale"
	holder := s.value("pod-b:1")
	fence := s.takeFenced(key, holder, 10*time.Second)
	for _, tt := range []struct {
		a    protocol.BreakGlassArgs
		want string
	}{
		{protocol.BreakGlassArgs{Identity: "pod-a:1", By: "bob"}, protocol.RefusedHolder},
		{protocol.BreakGlassArgs{Identity: "pod-b:1", Fence: fence - 1, FenceSet: true, By: "bob"}, protocol.RefusedFence},
	} {
		b, err := protocol.Revoke(s.ctx, s.r, key, tt.a)
		s.must(err)
		if b.Done || b.Refused != tt.want || b.Identity != "pod-b:1" {
			t.Errorf("revoke %+v = %+v, want refused %q", tt.a, b, tt.want)
		}
		f, err := protocol.Force(s.ctx, s.r, key, tt.a)
		s.must(err)
		if f.Done || f.Refused != tt.want {
			t.Errorf("force %+v = %+v, want refused %q", tt.a, f, tt.want)
		}
	}
	if v := s.c.Get(s.ctx, key).Val(); v != holder {
		t.Fatal("a refused revoke changed the value")
	}
	if c := s.counter(key); c != strconv.FormatUint(fence, 10) {
		t.Fatalf("a refused force moved the counter to %s", c)
	}
	if n, _ := s.r.Run(s.ctx, protocol.RenewCall(key, holder, time.Second, protocol.Quarantine{})).Int(); n != 1 {
		t.Fatal("the holder no longer renews after refused revokes")
	}
	if ok, _ := s.permit("sem", s.value("p:1"), 2, false); !ok {
		t.Fatal("no permit")
	}
	for _, k := range []string{"sem", "free"} {
		b, err := protocol.Revoke(s.ctx, s.r, k, protocol.BreakGlassArgs{By: "bob"})
		s.must(err)
		want := map[string]string{"sem": protocol.RefusedSemaphore, "free": protocol.RefusedFree}[k]
		if b.Done || b.Refused != want {
			t.Errorf("revoke of %s = %+v, want refused %q", k, b, want)
		}
	}
	b, err := protocol.Revoke(s.ctx, s.r, key, protocol.BreakGlassArgs{By: "bob"})
	s.must(err)
	if !b.Done {
		t.Fatal("revoke of whoever holds it refused")
	}
	b, err = protocol.Revoke(s.ctx, s.r, key, protocol.BreakGlassArgs{By: "carol"})
	s.must(err)
	if b.Done || b.Refused != protocol.RefusedRevoked || b.Identity != "revoked-by-bob" {
		t.Errorf("second revoke = %+v, want refused as revoked already", b)
	}
}

// TestForceRaisesTheCounterAboveTheFenceBeforeDeleting: the counter had
// gone back below the holder's fence (a failover that lost increments);
// force raises it above the fence the requester saw, deletes the key and
// says "released": the next holder takes the key at once with a greater
// fence. A plain DEL would leave the next fence at or below the forced
// holder's. Force also frees a revoke's tombstone.
func TestForceRaisesTheCounterAboveTheFenceBeforeDeleting(t *testing.T) {
	s := newServer(t)
	const key = "forced"
	holder := s.value("dead-node-pod:1")
	fence := s.takeFenced(key, holder, time.Minute)
	s.must(s.c.Set(s.ctx, protocol.FenceKey(key), fence-5, 0).Err())
	ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(key))
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(s.ctx); err != nil {
		t.Fatal(err)
	}
	b, err := protocol.Force(s.ctx, s.r, key, protocol.BreakGlassArgs{Identity: "dead-node-pod:1", Fence: fence - 5, FenceSet: true, Floor: fence, By: "alice"})
	s.must(err)
	if !b.Done || b.Raised <= fence {
		t.Fatalf("force = %+v, want done with the counter above %d", b, fence)
	}
	msg, err := ps.ReceiveMessage(s.ctx)
	s.must(err)
	if msg.Payload != "released" {
		t.Fatalf("message %q, want released", msg.Payload)
	}
	if f := s.takeFenced(key, s.value("next:1"), time.Minute); f <= fence {
		t.Fatalf("next fence %d, the forced holder's %d: want greater at once", f, fence)
	}
	tomb := s.value("tombstoned:1")
	s.takeFenced("t", tomb, time.Minute)
	r, err := protocol.Revoke(s.ctx, s.r, "t", protocol.BreakGlassArgs{By: "alice"})
	s.must(err)
	f, err := protocol.Force(s.ctx, s.r, "t", protocol.BreakGlassArgs{Identity: "tombstoned:1", Fence: r.Fence, FenceSet: true, By: "alice"})
	s.must(err)
	if !f.Done || f.Raised <= r.Fence || s.c.Exists(s.ctx, "t").Val() != 0 {
		t.Fatalf("force of a tombstone = %+v, want the key freed above fence %d", f, r.Fence)
	}
}

package chaos

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// A Redlock node's clock jumps forward (simulated: every key's TTL shrinks
// by the jump, which is what Redis's wall-clock expiry does). Recorded
// honestly: a jump on a minority of nodes is absorbed — the holder keeps a
// majority — but a jump on a majority expires the lock early, another
// client takes it while the holder is still inside its validity, and S1
// sees two holders. Redlock assumes bounded clock drift; this is the case
// where the assumption is broken, and no client-side check can see it.
func TestRedlockNodeClockJump(t *testing.T) {
	for _, tt := range []struct {
		name   string
		jumped int
		unsafe bool
	}{
		{"one node of three jumps", 1, false},
		{"two nodes of three jump", 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const ttl = 3 * time.Second
			nodes := redistest.StartNodes(t, 3)
			clients := redlockClients(t, addrsOf(nodes))
			s := newScenario(t, time.Minute, false)
			ctx := s.ctx
			a := newRedlock(t, clients, lock.WithTTL(ttl), lock.WithoutWatchdog(), lock.WithIdentity("a"))
			b := newRedlock(t, clients, lock.WithTTL(ttl), lock.WithIdentity("b"))

			lease, err := a.TryAcquire(ctx, "jumpy")
			if err != nil {
				t.Fatal(err)
			}
			from := Mono()
			for _, n := range nodes[:tt.jumped] {
				if err := n.JumpClock(ctx, ttl); err != nil {
					t.Fatal(err)
				}
			}
			s.tryHold(b, "b", "jumpy", 500*time.Millisecond, 50*time.Millisecond)
			s.h.Claim(Claim{Client: "a", Key: "jumpy", Fence: lease.Fence(), From: from, Until: min(Mono(), MonoAt(lease.ValidUntil()))})
			s.checkDocumented("S1", Overlaps(s.h.Claims()), tt.unsafe, "two holders when a majority of clocks jump")
		})
	}
}

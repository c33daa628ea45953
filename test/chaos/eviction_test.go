package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Under memory pressure a server with maxmemory and allkeys-lru evicts a
// held lock key and a second client takes the lock: two holders, shown.
// With noeviction the same pressure fails the filler's writes and the lock
// key survives. (The controller's Preflight condition flags such servers
// with EvictionPolicyUnsafe; see the controllers tests.)
func TestEvictionDropsAHeldLock(t *testing.T) {
	for _, tt := range []struct {
		policy string
		unsafe bool
	}{
		{"allkeys-lru", true},
		{"noeviction", false},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			srv := redistest.StartStandalone(t, redistest.WithConfig("--maxmemory", "4mb", "--maxmemory-policy", tt.policy))
			s := newScenario(t, time.Minute, false)
			ctx := s.ctx
			a := newLocker(t, srv.Client(t), lock.WithTTL(30*time.Second), lock.WithIdentity("a"))
			b := newLocker(t, srv.Client(t), lock.WithTTL(30*time.Second), lock.WithIdentity("b"))
			lease, err := a.TryAcquire(ctx, "evictable")
			if err != nil {
				t.Fatal(err)
			}
			from := Mono()
			// Fill memory; the lock key is the least recently used.
			filler := srv.Client(t)
			big := strings.Repeat("x", 64<<10)
			for i := range 400 {
				if err := filler.Set(ctx, fmt.Sprintf("filler-%d", i), big, 0).Err(); err != nil {
					break // noeviction: OOM refuses the filler
				}
			}
			s.tryHold(b, "b", "evictable", 300*time.Millisecond, 20*time.Millisecond)
			_ = s.release("a", lease, from) // its key may be gone: the claim is what counts
			s.checkDocumented("S1", Overlaps(s.h.Claims()), tt.unsafe, "the evicted lock taken by a second holder")
		})
	}
}

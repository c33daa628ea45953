package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Redis restarted empty: redlease's counter restarts from the server's clock
// and stays above every earlier fence. A counter without that floor (INCR
// from nothing) hands out small tokens again: the fence checker catches it.
func TestFenceAfterRestartEmpty(t *testing.T) {
	variants(t, "redlease", "naive counter without a floor", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		ctx := s.ctx
		restarts := rounds(2, 5)
		l := newLocker(t, srv.Client(t), lock.WithTTL(time.Second))
		for r := range restarts + 1 {
			for i := range 3 {
				client := fmt.Sprintf("holder-%d-%d", r, i)
				if s.naive {
					c := srv.Client(t)
					if !c.SetNX(ctx, "fenced", client, time.Second).Val() {
						t.Fatal("naive acquire failed")
					}
					from := Mono()
					f, err := c.Incr(ctx, "naive-fence").Uint64()
					if err != nil {
						t.Fatal(err)
					}
					c.Del(ctx, "fenced")
					s.h.Claim(Claim{Client: client, Key: "fenced", Fence: f, From: from, Until: Mono()})
					continue
				}
				lease, err := l.Acquire(ctx, "fenced")
				if err != nil {
					t.Fatal(err)
				}
				if err := s.release(client, lease, Mono()); err != nil {
					t.Fatalf("%s: release: %v", client, err)
				}
			}
			if r < restarts {
				if err := srv.RestartEmpty(); err != nil {
					t.Fatal(err)
				}
			}
		}
		s.check("fences", FencesNotIncreasing(s.h.Claims()))
	})
}

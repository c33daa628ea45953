package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Late release after expiry: A's lease expires while it works, B takes the
// lock, A releases late, C tries to take the lock while B holds it. With an
// owner-only release, C must wait for B (no overlap). A blind DEL, or a GET
// then DEL with the expiry between them, deletes B's key and lets C in
// while B still holds it: S1 catches both.
func TestLateReleaseAfterExpiry(t *testing.T) {
	// release runs after B took the lock; read is what a GET by A returned
	// before its lease expired.
	type release func(ctx context.Context, c *redis.Client, lease *lock.Lease, read string) error
	for _, tt := range []struct {
		name    string
		naive   bool
		release release
	}{
		{"redlease owner-only release", false, func(ctx context.Context, _ *redis.Client, l *lock.Lease, _ string) error {
			if err := l.Release(ctx); !errors.Is(err, lock.ErrLeaseLost) {
				return err
			}
			return nil
		}},
		{"naive blind DEL", true, func(ctx context.Context, c *redis.Client, l *lock.Lease, _ string) error {
			return c.Del(ctx, l.Key()).Err()
		}},
		{"naive GET then DEL", true, func(ctx context.Context, c *redis.Client, l *lock.Lease, read string) error {
			if read != l.Value() { // the GET, made while the key was still A's
				return nil
			}
			return c.Del(ctx, l.Key()).Err() // the DEL, after B took it
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			s := newScenario(t, 30*time.Second, tt.naive)
			ctx := s.ctx
			raw := srv.Client(t)
			a := newLocker(t, srv.Client(t), lock.WithTTL(150*time.Millisecond), lock.WithoutWatchdog(), lock.WithIdentity("a"))
			b := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("b"))
			c := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("c"))

			lease, err := a.TryAcquire(ctx, "late")
			if err != nil {
				t.Fatal(err)
			}
			aFrom := Mono()
			read := raw.Get(ctx, "late").Val() // what a GET-then-DEL client reads before its pause
			<-lease.Done()                     // A works past its TTL
			s.h.Claim(Claim{Client: "a", Key: "late", Fence: lease.Fence(), From: aFrom, Until: MonoAt(lease.ValidUntil())})

			bLease, err := b.Acquire(ctx, "late")
			if err != nil {
				t.Fatal(err)
			}
			bFrom := Mono()
			if err := tt.release(ctx, raw, lease, read); err != nil {
				t.Fatal(err)
			}
			s.tryHold(c, "c", "late", 300*time.Millisecond, 20*time.Millisecond)
			if err := s.release("b", bLease, bFrom); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
				t.Fatal(err)
			}
			s.check("S1", Overlaps(s.h.Claims()))
		})
	}
}

package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
)

// ttlSampler is S3: it watches a key's PTTL and counts samples where the key
// existed without a TTL.
func ttlSampler(ctx context.Context, c *redis.Client, key string) (stop func() int) {
	done := make(chan int)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		bad := 0
		for ctx.Err() == nil {
			if c.PTTL(ctx, key).Val() == -1 {
				bad++
			}
		}
		done <- bad
	}()
	return func() int { cancel(); return <-done }
}

// S3 under client crashes: helper processes acquiring in a loop are
// SIGKILLed at random points; the key never exists without a TTL. The naive
// SETNX-then-EXPIRE client, killed the same way, leaves one behind.
func TestClientCrashBetweenCommands(t *testing.T) {
	r := rng(t)
	for _, tt := range []struct {
		name  string
		role  string
		naive bool
	}{
		{"redlease", "acquire-loop", false},
		{"naive SETNX then EXPIRE", "naive-setnx-loop", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			c := srv.Client(t)
			s := newScenario(t, 2*time.Minute, tt.naive)
			ctx := s.ctx
			stop := ttlSampler(ctx, c, "crashy")
			kills := rounds(15, 60)
			for i := range kills {
				h := startHelper(t, tt.role, map[string]string{"REDIS": srv.Addr(), "KEY": "crashy", "TTL": "200ms"})
				h.next(t, "acquired", 10*time.Second) // it runs: now crash it mid-loop
				time.Sleep(time.Duration(5+r.IntN(40)) * time.Millisecond)
				h.signal(syscall.SIGKILL)
				_ = h.cmd.Wait()
				if tt.naive && c.PTTL(ctx, "crashy").Val() == -1 {
					t.Logf("naive client left a key without TTL after %d kills", i+1)
					break
				}
				// A key left by a crash clears within its TTL (redlease), so
				// the next round starts from a free lock.
				c.Del(ctx, "crashy")
			}
			bad := stop()
			vs := []Violation{}
			if bad > 0 {
				vs = append(vs, Violation(fmt.Sprintf("the lock key existed without a TTL in %d samples", bad)))
			}
			s.check("S3", vs)
		})
	}
}

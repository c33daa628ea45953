package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// A Sentinel failover under load: clients on failover clients keep taking
// the lock (with WAIT for the one replica) while SENTINEL FAILOVER moves the
// master. No two holders overlap and fences keep increasing. Errors during
// the switch (READONLY, unreplicated acquisitions) are expected and counted.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	g := redistest.StartSentinel(t, 1)
	s := newScenario(t, 2*time.Minute, false)
	ctx := s.ctx
	var errs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 3 {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs(),
			ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("closing client %d: %v", i, err)
			}
		})
		l, err := lock.New(c, lock.WithTTL(time.Second), lock.WithReplicaAck(1, 200*time.Millisecond),
			lock.WithIdentity(fmt.Sprintf("client-%d", i)), lock.WithRetryBackoff(5*time.Millisecond, 100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				lease, err := l.Acquire(actx, "under-load")
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						errs.Add(1)
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				s.holdFor(fmt.Sprintf("client-%d", i), lease, 2*time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	before := len(s.h.Claims())
	newMaster, err := g.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(rounds(3, 10)) * time.Second)
	close(stop)
	wg.Wait()
	after := len(s.h.Claims()) - before
	t.Logf("failover to %s: %d leases before, %d during and after, %d errors during the switch", newMaster, before, after, errs.Load())
	if after == 0 {
		t.Fatal("no lease was taken after the failover")
	}
	expectClean(t, "S1", Overlaps(s.h.Claims()))
	expectClean(t, "fences", FencesNotIncreasing(s.h.Claims()))
}

package chaos

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

const renewIfOwner = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`

// naiveReplyClock is a watchdog lock that counts validity from each reply
// instead of from the send: the pitfall of a reply read late.
type naiveReplyClock struct {
	until atomic.Int64 // CLOCK_MONOTONIC ns
	stop  chan struct{}
	done  sync.WaitGroup
}

func naiveAcquire(ctx context.Context, c *redis.Client, key, value string, ttl time.Duration) *naiveReplyClock {
	if !c.SetNX(ctx, key, value, ttl).Val() {
		return nil
	}
	n := &naiveReplyClock{stop: make(chan struct{})}
	n.until.Store(Mono() + int64(ttl))
	n.done.Go(func() {
		for {
			select {
			case <-n.stop:
				return
			case <-time.After(ttl / 3):
			}
			ok, err := c.Eval(ctx, renewIfOwner, []string{key}, value, ttl.Milliseconds()).Int()
			if err != nil || ok == 0 {
				return // it learns of the loss only now
			}
			n.until.Store(Mono() + int64(ttl)) // validity from the reply
		}
	})
	return n
}

func (n *naiveReplyClock) end() int64 {
	close(n.stop)
	n.done.Wait()
	return n.until.Load()
}

// Renewal replies delayed past TTL/2 (toxiproxy on the holder's connection):
// the server extends the key when a renewal arrives, but the holder hears
// of it late. redlease counts validity from the send and stops believing
// before the key expires (S1 clean). A client that counts from the reply
// believes it holds the lock long after the key expired and another client
// took it: S1 catches it.
func TestRenewRepliesDelayedPastHalfTheTTL(t *testing.T) {
	variants(t, "redlease", "naive validity from the reply", time.Minute, func(t *testing.T, s *scenario) {
		const ttl, latency = 600 * time.Millisecond, 400 * time.Millisecond
		srv := redistest.StartStandalone(t)
		proxy := faultproxy.New(t, srv.Addr())
		slow := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() {
			if err := slow.Close(); err != nil {
				t.Errorf("closing the slow client: %v", err)
			}
		})
		ctx := s.ctx

		var finish func() int64
		from := Mono()
		if s.naive {
			n := naiveAcquire(ctx, slow, "slow", "naive/1", ttl)
			if n == nil {
				t.Fatal("naive acquire failed")
			}
			finish = n.end
		} else {
			a := newLocker(t, slow, lock.WithTTL(ttl), lock.WithIdentity("slow"))
			lease, err := a.TryAcquire(ctx, "slow")
			if err != nil {
				t.Fatal(err)
			}
			finish = func() int64 {
				<-lease.Done()
				return MonoAt(lease.ValidUntil())
			}
		}
		proxy.Latency(latency)

		// Another client on a fast connection takes the lock as soon as
		// the key expires.
		b := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("fast"), lock.WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
		lease, err := b.Acquire(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		s.holdFor("fast", lease, latency+ttl) // long enough for the slow holder to notice
		proxy.Reset()
		s.h.Claim(Claim{Client: "slow", Key: "slow", From: from, Until: finish()})
		s.check("S1", Overlaps(s.h.Claims()))
	})
}

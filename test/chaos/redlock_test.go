package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

func redlockClients(t *testing.T, addrs []string) []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("closing the client of %s: %v", a, err)
			}
		})
		cs[i] = c
	}
	return cs
}

func addrsOf(nodes []*redistest.Server) []string {
	a := make([]string, len(nodes))
	for i, n := range nodes {
		a[i] = n.Addr()
	}
	return a
}

// contend runs clients that take the lock in turn until each got it
// `per` times (or the scenario's budget ends), recording claims.
func contend(s *scenario, lockers []*lock.Locker, key string, per int, work time.Duration) {
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() {
			for range per {
				lease, err := l.Acquire(s.ctx, key)
				if err != nil {
					if s.ctx.Err() == nil {
						s.t.Errorf("client %d: %v", i, err)
					}
					return
				}
				s.holdFor(fmt.Sprintf("client-%d", i), lease, work)
			}
		})
	}
	wg.Wait()
}

// Redlock with every minority of 5 nodes down: clients contending through
// the outage never overlap and their fences keep increasing.
func TestRedlockWithEveryMinorityDown(t *testing.T) {
	nodes := redistest.StartNodes(t, 5)
	clients := redlockClients(t, addrsOf(nodes))
	s := newScenario(t, 5*time.Minute, false)
	ctx := s.ctx
	lockers := make([]*lock.Locker, 3)
	for i := range lockers {
		lockers[i] = newRedlock(t, clients, lock.WithTTL(time.Second), lock.WithNodeTimeout(100*time.Millisecond),
			lock.WithIdentity(fmt.Sprintf("client-%d", i)))
	}
	per := rounds(2, 6)
	for mask := range 1 << 5 {
		down := 0
		for i := range 5 {
			if mask&(1<<i) != 0 {
				down++
			}
		}
		if down > 2 {
			continue // a majority down: nothing can be acquired (pkg/lock tests that)
		}
		for i, n := range nodes {
			if mask&(1<<i) != 0 {
				n.Kill()
			}
		}
		contend(s, lockers, "minority", per, time.Millisecond)
		for i, n := range nodes {
			if mask&(1<<i) != 0 {
				if err := n.Start(); err != nil {
					t.Fatal(err)
				}
				for clients[i].Ping(ctx).Err() != nil { // go-redis re-probes a failed address within a second
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	}
	expectClean(t, "S1", Overlaps(s.h.Claims()))
	expectClean(t, "fences", FencesNotIncreasing(s.h.Claims()))
	t.Logf("%d leases over 16 outage patterns", len(s.h.Claims()))
}

// naiveRedlock acquires on a majority but counts validity from the reply,
// without subtracting the time the acquisition took.
func naiveRedlock(ctx context.Context, clients []redis.UniversalClient, key, value string, ttl time.Duration) (until int64, ok bool) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for _, c := range clients {
		wg.Go(func() {
			if c.SetNX(ctx, key, value, ttl).Val() {
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return Mono() + int64(ttl), got > len(clients)/2
}

// Redlock with slow nodes: redlease subtracts the acquisition time from the
// validity; a Redlock without that check believes in keys that already
// expired while another client takes them (S1 catches it).
func TestRedlockElapsedTimeCheck(t *testing.T) {
	variants(t, "redlease", "naive without the elapsed-time check", time.Minute, func(t *testing.T, s *scenario) {
		const ttl, latency = time.Second, 300 * time.Millisecond
		nodes := redistest.StartNodes(t, 3)
		slowAddrs := addrsOf(nodes)
		var proxies []*faultproxy.Proxy
		for i := range 2 { // a majority of the nodes answers slowly
			p := faultproxy.New(t, slowAddrs[i])
			slowAddrs[i] = p.Addr()
			proxies = append(proxies, p)
		}
		slow := redlockClients(t, slowAddrs)
		fast := redlockClients(t, addrsOf(nodes))
		ctx := s.ctx
		a := newRedlock(t, slow, lock.WithTTL(ttl), lock.WithNodeTimeout(400*time.Millisecond), lock.WithoutWatchdog(), lock.WithIdentity("slow"))
		// Connect and load the scripts before the latency starts, so
		// each request costs one slow round trip.
		warm, err := a.TryAcquire(ctx, "warm-up")
		if err != nil {
			t.Fatal(err)
		}
		if err := warm.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range proxies {
			p.Latency(latency)
		}

		from := Mono()
		var until int64
		if s.naive {
			var ok bool
			until, ok = naiveRedlock(ctx, slow, "slow-redlock", "naive/1", ttl)
			if !ok {
				t.Fatal("naive Redlock did not get a majority")
			}
		} else {
			// Acquire and fence write-back take two slow round trips;
			// the validity left is what remains of the TTL after them.
			lease, err := a.TryAcquire(ctx, "slow-redlock")
			if err != nil {
				t.Fatal(err)
			}
			until = MonoAt(lease.ValidUntil())
			t.Logf("validity left after a %v acquisition: %v", time.Duration(Mono()-from), time.Until(lease.ValidUntil()))
		}
		s.h.Claim(Claim{Client: "slow", Key: "slow-redlock", From: from, Until: until})

		b := newRedlock(t, fast, lock.WithTTL(ttl), lock.WithIdentity("fast"), lock.WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
		lease, err := b.Acquire(ctx, "slow-redlock")
		if err != nil {
			t.Fatal(err)
		}
		s.holdFor("fast", lease, ttl)
		s.check("S1", Overlaps(s.h.Claims()))
	})
}

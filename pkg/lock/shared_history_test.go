package lock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// rwClaim is one holder's belief that it held the key, shared or not,
// during [from, until): from its acquisition's return to its release's
// start, or to its local deadline when that came first.
type rwClaim struct {
	who         string
	shared      bool
	from, until time.Time
}

// Six Lockers, each on a client of its own, take one key shared (70 %) or
// exclusively for 3 s. Two of them read every reply 40 ms late; two run
// without the watchdog and sometimes stall past their TTL (300 ms) while
// holding, believing only to their local deadline. The read/write model:
// no exclusive claim overlaps any other claim of the key; shared claims
// overlap each other (the readers really share). The naive scripts this
// model catches are TestSharedHoldsAtTheScripts's rows.
func TestSharedAndExclusiveClaimsNeverOverlap(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	const key, ttl, workers = "rw-history", 300 * time.Millisecond, 6
	var (
		mu     sync.Mutex
		claims []rwClaim
		wg     sync.WaitGroup
	)
	end := time.Now().Add(3 * time.Second)
	for i := range workers {
		slow, stalls := i < 2, i >= workers-2
		opts := []lock.Option{lock.WithTTL(ttl), lock.WithIdentity(fmt.Sprintf("rw-%d", i))}
		if stalls {
			opts = append(opts, lock.WithoutWatchdog())
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: lateReplies(slow)})
		closeAtEnd(t, c)
		l := newLocker(t, c, opts...)
		r := rand.New(rand.NewPCG(uint64(i), 7)) //nolint:gosec // G404: random schedule; no secrets
		wg.Go(func() {
			for time.Now().Before(end) {
				shared := r.IntN(10) < 7
				take := l.Acquire
				if shared {
					take = l.AcquireShared
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				lease, err := take(actx, key)
				cancel()
				if err != nil {
					continue // waited too long: a claim of nobody
				}
				c := rwClaim{who: fmt.Sprintf("rw-%d", i), shared: shared, from: time.Now()}
				hold := time.Duration(1+r.IntN(20)) * time.Millisecond
				if stalls && r.IntN(4) == 0 {
					hold = ttl + 100*time.Millisecond // stalled past the TTL
				}
				time.Sleep(hold)
				c.until = time.Now()
				if v := lease.ValidUntil(); v.Before(c.until) {
					c.until = v
				}
				_ = lease.Release(ctx) // ErrLeaseLost after a stall: the claim ended at the deadline
				mu.Lock()
				claims = append(claims, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	var sharedOverlaps, exclusive int
	for i, a := range claims {
		if !a.shared {
			exclusive++
		}
		for _, b := range claims[i+1:] {
			if !a.from.Before(b.until) || !b.from.Before(a.until) {
				continue
			}
			if a.shared && b.shared {
				sharedOverlaps++
				continue
			}
			t.Errorf("%s (shared %v, %v–%v) and %s (shared %v, %v–%v) both held %q", a.who, a.shared, a.from.Format(time.StampMicro),
				a.until.Format(time.StampMicro), b.who, b.shared, b.from.Format(time.StampMicro), b.until.Format(time.StampMicro), key)
		}
	}
	t.Logf("%d claims, %d exclusive, %d overlapping pairs of shared claims", len(claims), exclusive, sharedOverlaps)
	if exclusive < 10 || sharedOverlaps < 10 {
		t.Fatalf("%d exclusive claims and %d shared overlaps: the run exercised too little to show anything", exclusive, sharedOverlaps)
	}
}

// lateReplies is a dialer whose connections, when late, deliver every read
// 40 ms late: replies that arrive after part of a lease's validity went.
func lateReplies(late bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || !late {
			return c, err
		}
		return lateConn{c}, nil
	}
}

type lateConn struct{ net.Conn }

func (c lateConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	time.Sleep(40 * time.Millisecond)
	return n, err
}

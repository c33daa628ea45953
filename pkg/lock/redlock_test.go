package lock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// redlockNodes starts n independent servers and returns them with clients
// whose dial and read timeouts are short, so a stopped node fails fast.
func redlockNodes(t *testing.T, n int) ([]*redistest.Server, []redis.UniversalClient) {
	t.Helper()
	nodes := redistest.StartNodes(t, n)
	clients := make([]redis.UniversalClient, n)
	for i, s := range nodes {
		clients[i] = s.Client(t, func(o *redis.Options) {
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 200*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
			o.MaxRetries = -1
		})
	}
	return nodes, clients
}

// newRedlock is newLocker for Redlock.
func newRedlock(t testing.TB, clients []redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.NewRedlock(clients, opts...)
	if err != nil {
		t.Fatalf("NewRedlock: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// waitReachable waits until client answers again: after dial errors go-redis
// keeps returning the last one for up to a second while it re-probes.
func waitReachable(t *testing.T, client redis.UniversalClient) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for client.Ping(t.Context()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("node not reachable 5s after its restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRedlockRefusesBadNodeSets(t *testing.T) {
	// No I/O happens in NewRedlock: the addresses need not exist.
	node := func(addr string) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: addr})
		closeAtEnd(t, c)
		return c
	}
	a, b, c := node("127.0.0.1:1"), node("127.0.0.1:2"), node("127.0.0.1:3")
	aAgain := node("127.0.0.1:1")
	for _, tt := range []struct {
		name    string
		clients []redis.UniversalClient
		opts    []lock.Option
	}{
		{"none", nil, nil},
		{"one", []redis.UniversalClient{a}, nil},
		{"even", []redis.UniversalClient{a, b, c, node("127.0.0.1:4")}, nil},
		{"nil node", []redis.UniversalClient{a, nil, c}, nil},
		{"the same client twice", []redis.UniversalClient{a, b, a}, nil},
		{"the same address twice", []redis.UniversalClient{a, b, aAgain}, nil},
		{"replica ack", []redis.UniversalClient{a, b, c}, []lock.Option{lock.WithReplicaAck(1, time.Second)}},
		{"ticket order", []redis.UniversalClient{a, b, c}, []lock.Option{lock.WithTicketOrder()}},
		{"node timeout above ttl", []redis.UniversalClient{a, b, c}, []lock.Option{lock.WithTTL(time.Second), lock.WithNodeTimeout(2 * time.Second)}},
	} {
		if _, err := lock.NewRedlock(tt.clients, tt.opts...); !errors.Is(err, lock.ErrInvalidConfig) {
			t.Errorf("%s: NewRedlock = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
	l, err := lock.NewRedlock([]redis.UniversalClient{a, b, c})
	if err != nil {
		t.Fatalf("three distinct nodes: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// Over 5 nodes a lease is acquired if and only if at least 3 nodes are up:
// every subset of stopped nodes is tried. A failed attempt leaves no key on
// the nodes that answered.
func TestRedlockAcquiresIffAMajorityIsReachable(t *testing.T) {
	nodes, clients := redlockNodes(t, 5)
	rl := newRedlock(t, clients, lock.WithTTL(5*time.Second), lock.WithNodeTimeout(300*time.Millisecond))
	ctx := ctxTimeout(t, 2*time.Minute)

	for mask := range 1 << 5 {
		down := 0
		for i, n := range nodes {
			if mask&(1<<i) != 0 {
				n.Kill()
				down++
			}
		}
		key := fmt.Sprintf("subset-%02d", mask)
		lease, err := rl.TryAcquire(ctx, key)
		if up := 5 - down; up >= 3 {
			if err != nil {
				t.Fatalf("%d nodes up (mask %05b): %v, want acquired", up, mask, err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatalf("release with %d nodes up: %v", up, err)
			}
		} else {
			var qerr *lock.QuorumError
			if !errors.Is(err, lock.ErrQuorum) || !errors.As(err, &qerr) || len(qerr.Nodes) != down {
				t.Fatalf("%d nodes up (mask %05b): %v, want a *QuorumError naming %d nodes", up, mask, err, down)
			}
		}
		for i, n := range nodes {
			if mask&(1<<i) == 0 && n.Client(t).Exists(ctx, key).Val() != 0 {
				t.Fatalf("mask %05b: node %d keeps the key after release", mask, i)
			}
			if mask&(1<<i) != 0 {
				if err := n.Start(); err != nil {
					t.Fatal(err)
				}
				waitReachable(t, clients[i])
			}
		}
	}
}

// slowRedlock is a Redlock Locker over n nodes whose first `slow` replies
// are delayed by latency. Connections are opened and scripts loaded before
// the latency starts, so every request costs exactly one slow round trip.
func slowRedlock(t *testing.T, n, slow int, latency time.Duration, opts ...lock.Option) ([]*redistest.Server, *lock.Locker) {
	t.Helper()
	nodes := redistest.StartNodes(t, n)
	clients := make([]redis.UniversalClient, n)
	proxies := make([]*faultproxy.Proxy, slow)
	for i, s := range nodes {
		addr := s.Addr()
		if i < slow {
			proxies[i] = faultproxy.New(t, addr)
			addr = proxies[i].Addr()
		}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
		closeAtEnd(t, c)
		clients[i] = c
	}
	rl := newRedlock(t, clients, opts...)
	warm, err := rl.TryAcquire(t.Context(), "warm-up")
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, p := range proxies {
		p.Latency(latency)
	}
	return nodes, rl
}

// Slow nodes eat into validity: the lease's remaining validity shrinks by
// the time the acquisition took (acquire and fence write-back, each waiting
// for the slow nodes).
func TestRedlockValidityShrinksByTheAcquireTime(t *testing.T) {
	const ttl, latency = 3 * time.Second, 150 * time.Millisecond
	_, rl := slowRedlock(t, 5, 2, latency, lock.WithTTL(ttl), lock.WithNodeTimeout(time.Second))
	ctx := ctxTimeout(t, 30*time.Second)
	start := time.Now()
	lease, err := rl.TryAcquire(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	releaseAtEnd(t, lease)
	if took < 2*latency {
		t.Fatalf("acquisition took %v, less than two round trips through %v of latency", took, latency)
	}
	if left := time.Until(lease.ValidUntil()); left > ttl-2*latency {
		t.Fatalf("validity left %v after an acquisition that took %v; want at most %v", left, took, ttl-2*latency)
	}
}

// When slow nodes make the acquisition outlast its validity, it is not
// acquired and every node is released.
func TestRedlockAcquisitionOutlastingValidityIsReleasedEverywhere(t *testing.T) {
	const ttl, latency = 300 * time.Millisecond, 200 * time.Millisecond
	nodes, rl := slowRedlock(t, 5, 3, latency, lock.WithTTL(ttl), lock.WithNodeTimeout(280*time.Millisecond))
	ctx := ctxTimeout(t, 30*time.Second)
	// A majority answers, but acquire + fence write-back through 200ms of
	// latency each take longer than the 300ms lease's validity.
	if _, err := rl.TryAcquire(ctx, "outlasted"); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want not acquired (validity ran out)", err)
	}
	deadline := time.Now().Add(ttl)
	for i, n := range nodes {
		for n.Client(t).Exists(ctx, "outlasted").Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still holds the failed attempt's key", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A Redlock failed attempt while a minority answers: release reaches the
// nodes that were paused, which hold no key of the attempt beyond its TTL.
func TestRedlockReleasesOnNodesThatDidNotAnswer(t *testing.T) {
	nodes, clients := redlockNodes(t, 5)
	const ttl = 300 * time.Millisecond
	rl := newRedlock(t, clients, lock.WithTTL(ttl), lock.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, 30*time.Second)
	for _, n := range nodes[:3] {
		n.Pause()
	}
	if _, err := rl.TryAcquire(ctx, "minority"); !errors.Is(err, lock.ErrQuorum) {
		t.Fatalf("TryAcquire with 2 of 5 nodes = %v, want ErrQuorum", err)
	}
	for _, n := range nodes[:3] {
		n.Resume()
	}
	for i, n := range nodes[3:] {
		if n.Client(t).Exists(ctx, "minority").Val() != 0 {
			t.Fatalf("answering node %d keeps the key", i+3)
		}
	}
	time.Sleep(ttl + 50*time.Millisecond)
	for i, n := range nodes[:3] {
		if n.Client(t).Exists(ctx, "minority").Val() != 0 {
			t.Fatalf("paused node %d holds the key beyond its TTL", i)
		}
	}
}

// Fences keep increasing across holders while nodes are stopped, wiped and
// brought back — including when the only node shared by two successive
// majorities was wiped in between.
func TestRedlockFencesIncreaseAcrossWipedNodes(t *testing.T) {
	nodes, clients := redlockNodes(t, 5)
	ctx := ctxTimeout(t, time.Minute)
	holders := []*lock.Locker{
		newRedlock(t, clients, lock.WithTTL(2*time.Second), lock.WithNodeTimeout(200*time.Millisecond), lock.WithIdentity("a")),
		newRedlock(t, clients, lock.WithTTL(2*time.Second), lock.WithNodeTimeout(200*time.Millisecond), lock.WithIdentity("b")),
	}
	var last uint64
	take := func(step string, h *lock.Locker) {
		t.Helper()
		lease, err := h.Acquire(ctx, "fenced")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if lease.Fence() <= last {
			t.Fatalf("%s: fence %d not above the previous %d", step, lease.Fence(), last)
		}
		last = lease.Fence()
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", step, err)
		}
	}
	restartEmpty := func(idx ...int) {
		for _, i := range idx {
			if err := nodes[i].RestartEmpty(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A majority {0,1,2}, then the next majority {2,3,4} shares only node 2,
	// which was wiped in between.
	nodes[3].Kill()
	nodes[4].Kill()
	take("holder a on {0,1,2}", holders[0])
	restartEmpty(3, 4, 2)
	nodes[0].Kill()
	nodes[1].Kill()
	take("holder b on {2,3,4}, node 2 wiped", holders[1])
	restartEmpty(0, 1)

	// Then many holders while a rotating minority is down or wiped.
	for i := range 20 {
		down := []int{i % 5, (i + 2) % 5}
		for _, d := range down {
			if i%3 == 0 {
				restartEmpty(d)
			} else {
				nodes[d].Kill()
			}
		}
		take(fmt.Sprintf("round %d, nodes %v disturbed", i, down), holders[i%2])
		for _, d := range down {
			if !nodes[d].Alive() {
				if err := nodes[d].Start(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// The watchdog renews on a majority; a lease survives a minority going away.
// (TTL 500 ms, node timeout 100 ms: with 300 and 50 ms a machine loaded by
// parallel test runs once let both live nodes' renewals time out.)
func TestRedlockRenewalNeedsOnlyAMajority(t *testing.T) {
	nodes, clients := redlockNodes(t, 3)
	const ttl = 500 * time.Millisecond
	rl := newRedlock(t, clients, lock.WithTTL(ttl), lock.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, 10*time.Second)
	lease, err := rl.TryAcquire(ctx, "renewed")
	if err != nil {
		t.Fatal(err)
	}
	nodes[0].Kill()
	time.Sleep(4 * ttl)
	if err := lease.Err(); err != nil {
		t.Fatalf("lease lost with 2 of 3 nodes up: %v", err)
	}
	nodes[1].Kill()
	waitClosed(t, lease.Done(), 2*ttl, "the end of a lease whose majority is gone")
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", lease.Err())
	}
}

package lock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewRedlock returns a Locker that holds a key only while a majority of
// independent Redis nodes hold it (the Redlock algorithm): an odd number of
// at least 3 clients, each on its own server — never replicas of one
// another, never one server under several names (the controller's
// QuorumAvailable condition checks both). It does no I/O; bad arguments fail
// with ErrInvalidConfig. WithReplicaAck does not apply: the nodes are
// independent masters.
//
// Requests go to all nodes in parallel; each node gets WithNodeTimeout to
// answer. A lease counts only if a majority acquired it and the largest
// fence among them was written back to a majority, all within its validity.
// Failed attempts and releases are sent to every node, including those that
// did not answer (each bounded by the node timeout; no background retries:
// a node that still does not answer keeps the key until its TTL).
func NewRedlock(clients []redis.UniversalClient, opts ...Option) (*Locker, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(clients) < 3 || len(clients)%2 == 0 {
		return nil, invalidConfig("Redlock needs an odd number (3, 5, 7...) of independent nodes, got %d", len(clients))
	}
	if cfg.replicaAcks > 0 {
		return nil, invalidConfig("WithReplicaAck does not apply to Redlock: its nodes are independent masters")
	}
	if cfg.fifo {
		return nil, invalidConfig("WithFIFO does not apply to Redlock: its waiting line would need a quorum of its own")
	}
	if cfg.tickets {
		return nil, invalidConfig("WithTicketOrder does not apply to Redlock: its waiters have no line")
	}
	if cfg.quarantine.On {
		return nil, invalidConfig("WithFailoverQuarantine does not apply to Redlock: its nodes are independent masters, with no failover to wait out")
	}
	r := &redlock{quorum: len(clients)/2 + 1, fencing: cfg.fencing, timeout: cfg.nodeTimeoutFor(), clock: cfg.clock}
	for i, c := range clients {
		n, err := newSingle(c, &cfg)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		n.released = true // Redlock's waiters have no line: they wake on "released"
		r.nodes = append(r.nodes, n)
	}
	if err := distinctNodes(r.nodes); err != nil {
		return nil, err
	}
	return newLocker(cfg, r)
}

// distinctNodes refuses a client, or a server address, given twice: one
// server counted as two votes lets a minority of real nodes win a quorum.
// (Two names for one server are found only by the controller, which
// compares run_ids.)
func distinctNodes(nodes []*single) error {
	seen := map[any]int{}
	for i, n := range nodes {
		ids := []any{n.client}
		if _, ok := n.client.(*redis.Client); ok {
			ids = append(ids, "addr "+n.addr())
		}
		for _, id := range ids {
			if j, dup := seen[id]; dup {
				return invalidConfig("Redlock nodes %d and %d are the same server (%s): each vote must come from an independent node", j, i, n.addr())
			}
			seen[id] = i
		}
	}
	return nil
}

type redlock struct {
	nodes    []*single
	quorum   int
	fencing  bool
	timeout  time.Duration // per node and request
	clock    Clock
	inflight sync.WaitGroup // node requests still running after their timeout
}

// reply is one node's answer to a fanned-out request.
type reply[T any] struct {
	node int
	v    T
	err  error
}

// fanOut sends op to every node at once and collects what arrives within the
// node timeout; nodes that did not answer by then carry an error.
func fanOut[T any](ctx context.Context, r *redlock, op func(context.Context, *single) (T, error)) []reply[T] {
	out := make(chan reply[T], len(r.nodes))
	for i, n := range r.nodes {
		r.inflight.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, r.timeout)
			defer cancel()
			v, err := op(nctx, n)
			out <- reply[T]{node: i, v: v, err: err}
		})
	}
	replies := make([]reply[T], len(r.nodes))
	for i := range replies {
		replies[i] = reply[T]{node: i, err: fmt.Errorf("no reply within the node timeout %v", r.timeout)}
	}
	expired := make(chan struct{})
	t := r.clock.AfterFunc(r.timeout, func() { close(expired) })
	defer t.Stop()
	for range r.nodes {
		select {
		case x := <-out:
			replies[x.node] = x
		case <-expired:
			return replies
		}
	}
	return replies
}

// tally counts the nodes that said yes and no, and keeps the errors.
func tally[T any](r *redlock, op string, replies []reply[T], yes func(T) bool) (ayes, noes int, qerr *QuorumError) {
	qerr = &QuorumError{Op: op, Quorum: r.quorum}
	for _, x := range replies {
		switch {
		case x.err != nil:
			qerr.Nodes = append(qerr.Nodes, NodeError{Index: x.node, Addr: r.nodes[x.node].addr(), Err: x.err})
		case yes(x.v):
			ayes++
		default:
			noes++
		}
	}
	return ayes, noes, qerr
}

// waitingLine is false: a line would need its own quorum across the
// nodes. Redlock's waiters wake on any node's "released" message.
func (r *redlock) waitingLine() bool { return false }

func (r *redlock) leave(target, string) {}

func (r *redlock) countsHandOffs() bool { return false } // no line, no hand-offs

func (r *redlock) acquire(ctx context.Context, t target, c claim) (attempt, error) {
	if t.semaphore() {
		return attempt{}, errRedlockSemaphore // Locker.Semaphore refuses it first
	}
	if t.shared {
		return attempt{}, errRedlockShared // AcquireShared refuses it first
	}
	key := t.key
	c.place, c.queued = 0, false
	value := c.value
	replies := fanOut(ctx, r, func(ctx context.Context, n *single) (attempt, error) {
		return n.acquire(ctx, t, c)
	})
	got, held, qerr := tally(r, "acquire", replies, func(a attempt) bool { return a.acquired })
	var fence uint64
	var holderTTL time.Duration
	for _, x := range replies {
		if x.err == nil && x.v.acquired {
			fence = max(fence, x.v.fence)
		} else if x.err == nil {
			holderTTL = max(holderTTL, x.v.holderTTL)
		}
	}
	if got >= r.quorum && r.fencing {
		// Majorities intersect: once a majority's counters are at least this
		// fence, the next holder's majority includes one of them, and its
		// maximum is larger.
		wb := fanOut(ctx, r, func(ctx context.Context, n *single) (bool, error) {
			_, err := n.raiseFence(ctx, key, fence)
			return true, err
		})
		if ok, _, werr := tally(r, "fence write-back", wb, func(bool) bool { return true }); ok < r.quorum {
			r.releaseAll(t, value)
			return attempt{}, werr
		}
	}
	if got >= r.quorum {
		return attempt{acquired: true, fence: fence}, nil
	}
	r.releaseAll(t, value)
	if held > len(r.nodes)-r.quorum { // a majority said "held": the lock is taken
		return attempt{holderTTL: holderTTL, counter: -1}, nil
	}
	return attempt{}, qerr
}

// releaseAll gives back a failed attempt on every node, answering or not.
func (r *redlock) releaseAll(t target, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	fanOut(ctx, r, func(ctx context.Context, n *single) (bool, error) { return n.release(ctx, t, value, nil) })
}

func (r *redlock) renew(ctx context.Context, t target, value string, ttl time.Duration) (bool, error) {
	replies := fanOut(ctx, r, func(ctx context.Context, n *single) (bool, error) { return n.renew(ctx, t, value, ttl) })
	return r.decide("renew", replies)
}

func (r *redlock) release(ctx context.Context, t target, value string, arg any) (bool, error) {
	replies := fanOut(ctx, r, func(ctx context.Context, n *single) (bool, error) { return n.release(ctx, t, value, arg) })
	return r.decide("release", replies)
}

// decide turns per-node answers into one: true with a majority of yes, false
// when so many said no that a majority is impossible, else a *QuorumError.
func (r *redlock) decide(op string, replies []reply[bool]) (bool, error) {
	yes, no, qerr := tally(r, op, replies, func(ok bool) bool { return ok })
	switch {
	case yes >= r.quorum:
		return true, nil
	case no > len(r.nodes)-r.quorum:
		return false, nil
	}
	return false, qerr
}

func (r *redlock) subscribers() []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(r.nodes))
	for i, n := range r.nodes {
		cs[i] = n.client
	}
	return cs
}

func (r *redlock) close(ctx context.Context) {
	waitGroup(ctx, &r.inflight)
	for _, n := range r.nodes {
		n.close(ctx)
	}
}

// waitGroup waits for wg, or until ctx ends.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

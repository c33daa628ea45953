package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// Holding is what Redis says about a key, without its value: who holds it,
// for how long, and the fence counter.
type Holding struct {
	Key string
	// Identity of the holder; empty when the key is free, or held by a value
	// this library did not write.
	Identity string
	Held     bool
	// Shared is how many hold the key shared (AcquireShared; holds that
	// expired and no script removed yet included); 0 when it is free or
	// held exclusively. Identity is then empty and TTL the last hold's.
	Shared int
	// TTL is the remaining time to live (negative: a key without TTL).
	TTL time.Duration
	// Fence is the fence counter: the last fence handed out.
	Fence uint64
	// Quarantine is how long a failover quarantine recorded on the key
	// still holds grants back (WithFailoverQuarantine); 0 when none. A
	// failover no acquisition, renewal or release has run into yet shows
	// no quarantine here.
	Quarantine time.Duration
	// Waiting is the key's waiting line: how many wait, and the first
	// InspectWaiters of them. Nil when the server does not report it
	// (Redlock, which has no line; a server whose function library an
	// older build loaded).
	Waiting *Waiting
}

// Inspect reads the state of key from Redis (for Redlock, the holding that a
// majority of nodes agrees on, or a *QuorumError). It never returns the
// lock value.
func (l *Locker) Inspect(ctx context.Context, key string) (Holding, error) {
	if err := ValidateKey(key); err != nil {
		return Holding{}, err
	}
	if l.isClosed() {
		return Holding{}, ErrClosed
	}
	return l.backend.inspect(ctx, key)
}

// inspect reads one server in one round trip.
func (s *single) inspect(ctx context.Context, key string) (Holding, error) {
	h, err := protocol.ReadHolderWaiters(ctx, s.run, key, InspectWaiters)
	if err != nil {
		return Holding{Key: key}, fmt.Errorf("lock: inspect: %w", err)
	}
	return Holding{Key: key, Identity: h.Identity, Held: h.Held, Shared: h.Shared, TTL: h.TTL, Fence: h.Fence, Quarantine: h.QuarantineLeft,
		Waiting: waitingOf(h.Line)}, nil
}

func (r *redlock) inspect(ctx context.Context, key string) (Holding, error) {
	replies := fanOut(ctx, r, func(ctx context.Context, n *single) (Holding, error) { return n.inspect(ctx, key) })
	votes := map[string]int{} // identity ("" = free) → nodes
	var highest uint64
	for _, x := range replies {
		if x.err == nil {
			votes[x.v.Identity]++
			highest = max(highest, x.v.Fence)
		}
	}
	for _, x := range replies {
		if x.err == nil && votes[x.v.Identity] >= r.quorum {
			h := x.v
			h.Fence = highest
			h.Waiting = nil // Redlock has no line: a node's is a leftover
			return h, nil
		}
	}
	_, _, qerr := tally(r, "inspect", replies, func(Holding) bool { return true })
	return Holding{Key: key, Fence: highest}, qerr
}

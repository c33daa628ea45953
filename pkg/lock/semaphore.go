package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// MaxPermits bounds a semaphore's number of permits.
const MaxPermits = protocol.MaxPermits

// errRedlockSemaphore refuses a semaphore on Redlock: each node can bound
// its own holders, but a majority of nodes for each holder does not bound
// them all (with 3 nodes and 2 permits, holders {a,b}, {a,c} and {b,c} on
// the three nodes give a, b and c a majority each: three holders).
var errRedlockSemaphore = invalidConfig("semaphores need one Redis deployment (New): Redlock's per-node permit counts do not bound the holders of a majority")

// Semaphore is a Locker bound to a semaphore key with a number of permits:
// at most that many leases on the key at once, across every Locker that
// uses the same key and count. Each lease is one permit and behaves like a
// lock's: atomic acquisition, owner-only release, the watchdog, the local
// deadline, WithMaxHold, and a fencing token from the semaphore's one
// counter, strictly increasing over all its permits. Like Mutex it is a
// value-free handle; handles share their Locker's subscription, leases and
// Close.
//
// The number of permits is each caller's: a caller takes a permit only
// while fewer than its count are held, and nothing is ever revoked, so
// lowering the count makes new acquisitions wait until the holders are
// below it. While callers disagree (a rolling change), the largest count
// in use bounds the holders. A key is a lock or a semaphore, not both:
// while a lock holds it no permit is given, and while a permit is held no
// lock is.
type Semaphore struct {
	locker *Locker
	t      target
}

// Semaphore returns the handle on the semaphore key with permits permits.
// The key and count are checked on use: a bad key, a count outside
// [1, MaxPermits], or a Locker made by NewRedlock make every method fail
// with ErrInvalidConfig.
func (l *Locker) Semaphore(key string, permits int) *Semaphore {
	return &Semaphore{locker: l, t: target{key: key, permits: permits}}
}

// Key returns the semaphore key.
func (s *Semaphore) Key() string { return s.t.key }

// Permits returns the number of permits this handle allows.
func (s *Semaphore) Permits() int { return s.t.permits }

func (s *Semaphore) check() error {
	if err := ValidateKey(s.t.key); err != nil {
		return err
	}
	if err := protocol.ValidatePermits(s.t.permits); err != nil {
		return invalid(err)
	}
	if _, ok := s.locker.backend.(*single); !ok {
		return errRedlockSemaphore
	}

	return nil
}

// Acquire waits until it holds a permit, the Locker is closed, or ctx ends
// (see Locker.Acquire: a failed attempt queues in the semaphore's waiting
// line, and a release hands its permit to the first waiter and tells only
// that one). Every call takes a permit of its own: a goroutine that
// already holds one and calls Acquire again takes (or waits for) a second.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.locker.acquireTimed(ctx, s.t)
}

// TryAcquire makes one attempt. When every permit is held it fails with a
// *NotAcquiredError (errors.Is(err, ErrNotAcquired)) carrying how long
// until one frees by expiry.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.locker.tryAcquire(ctx, s.t)
}

// PermitHolding is what Redis says about a semaphore, without values.
type PermitHolding struct {
	Key string
	// Holders are the live permits, the soonest to expire first.
	Holders []PermitHolder
	// Fence is the fence counter: the last fence handed out.
	Fence uint64
	// Waiting is the key's waiting line, as Holding.Waiting.
	Waiting *Waiting
}

// PermitHolder is one live permit.
type PermitHolder struct {
	// Identity of the holder; empty for a value this library did not write.
	Identity string
	// TTL is the permit's remaining time to live.
	TTL time.Duration
	// Pending marks a permit a release handed to a waiter that has not
	// confirmed it yet (for at most the hand-off window); Fence and Since
	// are then zero.
	Pending bool
	// Fence is the holder's token, Since when it took the permit (the
	// server's clock, in milliseconds).
	Fence uint64
	Since time.Time
}

// Inspect reads the semaphore's live permits and its fence counter. It
// never returns a lock value.
func (s *Semaphore) Inspect(ctx context.Context) (PermitHolding, error) {
	if err := s.check(); err != nil {
		return PermitHolding{}, err
	}
	if s.locker.isClosed() {
		return PermitHolding{}, ErrClosed
	}
	b, _ := s.locker.backend.(*single) // check refused the others
	p, err := protocol.ReadPermits(ctx, b.run, s.t.key, InspectWaiters)
	if err != nil {
		return PermitHolding{Key: s.t.key}, fmt.Errorf("lock: inspect: %w", err)
	}
	h := PermitHolding{Key: s.t.key, Fence: p.Fence, Waiting: waitingOf(p.Line)}
	for _, x := range p.Holders {
		h.Holders = append(h.Holders, PermitHolder{Identity: x.Identity, TTL: x.TTL, Pending: !x.Confirmed, Fence: x.Fence, Since: x.Since})
	}
	return h, nil
}

// Held is the number of live permits, confirmed or pending.
func (h PermitHolding) Held() int { return len(h.Holders) }

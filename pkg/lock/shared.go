package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// errRedlockShared refuses shared holds on Redlock: a majority of nodes
// would have to agree on the set of readers as well as on the writer, and
// Redlock's per-node grants cannot keep a writer out of a key that a
// different majority holds shared.
var errRedlockShared = invalidConfig("shared holds need one Redis deployment (New): Redlock grants each node's hold alone, and cannot keep a writer out of a key a different majority holds shared")

// AcquireShared waits until it holds key shared, the Locker is closed, or
// ctx ends, as Acquire does. Any number of shared holders may hold a key
// at once, or one exclusive holder (Acquire, TryAcquire), never both.
//
// It is writer-preferring: once an exclusive waiter is in the key's line,
// a new shared request waits behind it, with or without WithFIFO, so a
// stream of readers cannot starve a writer. Both kinds wait in one line,
// in order of arrival: a writer's release hands the key to the readers
// that arrived before the next writer, all together, and the last reader's
// release hands it to that writer, each in the release's one round trip.
//
// Each shared hold is a Lease of its own, with its renewal, local
// deadline, loss signal and WithMaxHold. Its Fence is the key's fence
// counter as the grant found it, not incremented: every exclusive holder
// granted before it has a lower or equal token, every one granted after
// it a higher one. A downstream store can use it to refuse a stale
// writer's writes and to know which generation a reader read; it cannot
// order readers among themselves (readers granted together may carry one
// token, and a hand-off counts, so a reader's token may also be above the
// last writer's).
//
// A key held shared is not a semaphore: a Semaphore on the same key waits
// until the shared holders are gone, as a shared request waits for a
// semaphore's permits. Shared holds need New: on a Locker made by
// NewRedlock every call fails with ErrInvalidConfig.
func (l *Locker) AcquireShared(ctx context.Context, key string) (*Lease, error) {
	if _, ok := l.backend.(*single); !ok {
		return nil, errRedlockShared
	}
	return l.acquireTimed(ctx, target{key: key, shared: true})
}

// TryAcquireShared makes one attempt at a shared hold of key (see
// AcquireShared). When an exclusive holder holds the key, or an exclusive
// waiter is in its line, it fails with a *NotAcquiredError
// (errors.Is(err, ErrNotAcquired)) carrying how long the key stays held.
func (l *Locker) TryAcquireShared(ctx context.Context, key string) (*Lease, error) {
	if _, ok := l.backend.(*single); !ok {
		return nil, errRedlockShared
	}
	return l.tryAcquire(ctx, target{key: key, shared: true})
}

// Shared reports a shared hold (AcquireShared, TryAcquireShared).
func (s *Lease) Shared() bool { return s.shared }

// Upgrade turns this shared hold into the key's exclusive hold without
// letting go, in one atomic step on the server, and returns the exclusive
// lease (a fence of its own, the next, as any exclusive grant's); this
// lease then ends, with an Err matching ErrReleased, and is neither
// renewed nor released again. Upgrade never waits: while others hold the
// key shared it fails with an error matching ErrUpgradeContended and this
// lease goes on unchanged, so two holders upgrading at once cannot
// deadlock (each is refused; one may release and the other try again). An
// upgrade goes before exclusive waiters already in line: its caller held
// the key before them. ErrInvalidConfig for an exclusive lease.
func (s *Lease) Upgrade(ctx context.Context) (*Lease, error) {
	l := s.locker
	b, ok := l.backend.(*single)
	if !s.shared || !ok {
		return nil, invalidConfig("Upgrade takes a shared lease (AcquireShared)")
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if err := l.enter(); err != nil {
		return nil, err
	}
	defer l.calls.Done()
	sent := l.cfg.clock.Now()
	u, err := b.upgrade(ctx, s.key, s.value, l.cfg.ttl)
	switch {
	case err != nil:
		return nil, err
	case u.Lost:
		return nil, fmt.Errorf("%w: %q: no live shared hold to upgrade", ErrLeaseLost, s.key)
	case !u.Upgraded && u.Others == 0:
		return nil, fmt.Errorf("%w: %q: a failover quarantine holds grants back", ErrUpgradeContended, s.key)
	case !u.Upgraded:
		return nil, fmt.Errorf("%w: %d other shared holders of %q", ErrUpgradeContended, u.Others, s.key)
	}
	s.end(fmt.Errorf("%w: %q was upgraded to an exclusive lease", ErrReleased, s.key), "")
	t := target{key: s.key}
	validUntil := sent.Add(l.cfg.ttl - l.cfg.drift())
	if !l.cfg.clock.Now().Before(validUntil) {
		l.releaseQuietly(t, s.value)
		return nil, fmt.Errorf("%w: %q: validity ran out before the upgrade completed", ErrLeaseLost, s.key)
	}
	return l.hold(ctx, t, s.value, s.valueArg, u.Fence, sent, validUntil, l.cfg.renewInterval)
}

// upgrade runs the upgrade of value's shared hold of key to its exclusive
// hold for ttl. Under WithReplicaAck an upgrade the replicas did not
// acknowledge is given back (the shared hold is gone with it).
func (s *single) upgrade(ctx context.Context, key, value string, ttl time.Duration) (protocol.Upgrade, error) {
	cmd, wait := s.eval(ctx, key, protocol.UpgradeSharedCall(key, value, ttl, s.fencing, s.quarantine))
	reply, err := cmd.Slice()
	if err != nil {
		if ambiguous(err) {
			// The upgrade may have run: the key could be held exclusively
			// by no lease for a TTL. A lock's release of the value undoes
			// exactly that, and nothing when the upgrade did not run.
			s.giveBackAsync(target{key: key}, value)
		}
		return protocol.Upgrade{}, fmt.Errorf("lock: upgrade %q: %w", key, err)
	}
	u, err := protocol.ParseUpgrade(reply)
	if err != nil || !u.Upgraded {
		return u, err
	}
	if err := s.acked(key, wait); err != nil {
		s.giveBack(target{key: key}, value)
		return protocol.Upgrade{}, err
	}
	return u, nil
}

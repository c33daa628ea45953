package lock

import "context"

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
func (l *Lease) Shared() bool { return l.shared }

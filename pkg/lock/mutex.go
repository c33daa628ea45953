package lock

import "context"

// Mutex is a Locker bound to one key, the way redsync's Mutex and etcd's
// concurrency.Mutex are: code that works on one lock takes a *Mutex and
// never repeats the key. It is a value-free handle: make as many as you
// like, from any goroutine; they share the Locker's subscription, leases and
// Close.
type Mutex struct {
	locker *Locker
	key    string
}

// Mutex returns the handle on key. The key is checked on use: a bad key
// makes every method fail with ErrInvalidConfig.
func (l *Locker) Mutex(key string) *Mutex { return &Mutex{locker: l, key: key} }

// Key returns the lock key.
func (m *Mutex) Key() string { return m.key }

// Acquire waits until it holds the key (see Locker.Acquire).
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) { return m.locker.Acquire(ctx, m.key) }

// TryAcquire makes one attempt (see Locker.TryAcquire).
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return m.locker.TryAcquire(ctx, m.key)
}

// AcquireShared waits until it holds the key shared (see
// Locker.AcquireShared): the Mutex as a read/write lock, whose Acquire is
// the writer's.
func (m *Mutex) AcquireShared(ctx context.Context) (*Lease, error) {
	return m.locker.AcquireShared(ctx, m.key)
}

// TryAcquireShared makes one attempt at a shared hold (see
// Locker.TryAcquireShared).
func (m *Mutex) TryAcquireShared(ctx context.Context) (*Lease, error) {
	return m.locker.TryAcquireShared(ctx, m.key)
}

// Inspect reads who holds the key, for how long, and its fence counter
// (see Locker.Inspect).
func (m *Mutex) Inspect(ctx context.Context) (Holding, error) { return m.locker.Inspect(ctx, m.key) }

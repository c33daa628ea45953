/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/pkg/lock"
)

// ErrClosed is returned by a Locker's methods after Close. It wraps
// lock.ErrClosed, so errors.Is(err, lock.ErrClosed) holds too.
var ErrClosed = fmt.Errorf("kube: %w", lock.ErrClosed)

// ErrRebinding reports an acquisition refused because the DistributedLock
// now names another lock — another store, status.key, mode or db, Redlock
// nodes, Cluster seeds or Sentinel master name — while this Locker still
// holds leases, or has acquisitions in flight, under the old one. It
// happens when the resource is deleted and re-created under the same name
// with another key or store (the API makes these immutable on a live
// object). A lease on the new key or servers beside one on the old would
// be two holders of "the same lock" at once.
//
// TryAcquire and Inspect fail with it at once; Acquire waits, bounded by its
// context, until the old leases end and then uses the new key (on timeout
// its error matches both ErrRebinding and the context's error). The error
// names the old and the new key and servers. A new master of a Standalone
// or Replicated lock (a failover), new credentials (a rotation) or new TLS
// settings are not a rebinding: they are followed at once.
var ErrRebinding = errors.New("kube: the DistributedLock names another lock while leases are held under the old one")

// Locker is a handle on one DistributedLock's key. It is safe for concurrent
// use; create one per resource and share it: Lockers share the process's
// API client, watch and Secret copies (see NewLocker), but each has its own
// Redis clients.
type Locker struct {
	namespace, name string
	watch           *namespaceWatch // shared with the process's other Lockers of the namespace
	secrets         *credentials
	opts            []lock.Option

	mu      sync.Mutex
	obj     *v1alpha1.DistributedLock // latest seen; shared with the watch, never modified
	gone    bool                      // deleted since (obj is its last version)
	current *binding                  // for new acquisitions; nil until needed
	retired []*binding                // closed once their last lease ends
	closed  bool
	changed chan struct{} // closed by wake; nil when nobody waits
}

// binding is one lock.Locker with its clients, and the leases it handed out
// (with acquisitions in flight).
type binding struct {
	fingerprint string
	// store is the fingerprint of everything but the key: bindings with
	// one store reach the same servers with the same settings.
	store   string
	id      identity
	desc    string // the key and servers, for errors
	key     string
	permits int // above 1: acquisitions take a permit of the semaphore key
	locker  *lock.Locker
	clients []redis.UniversalClient
	leases  int
}

// NewLocker reads the DistributedLock namespace/name (ctx bounds this first
// read only) and returns a handle that follows the resource until Close.
// opts are applied after the options the resource implies (TTL, renew
// interval, maxHold, fencing, waitForReplicas, the failover quarantine of
// status.failoverQuarantine), so they can add an identity, a logger or
// metrics — or override the resource, deliberately.
//
// The Lockers of a process share one API client per rest.Config (equal
// configs count as one, see the package doc), one watch per namespace and
// one copy of each credentials Secret: the first Locker of a namespace
// lists its DistributedLocks, the next ones read from that watch without a
// request. The last Close stops the watch.
func NewLocker(ctx context.Context, cfg *rest.Config, namespace, name string, opts ...lock.Option) (*Locker, error) {
	w, err := clients.join(cfg, namespace)
	if err != nil {
		return nil, err
	}
	l := &Locker{namespace: namespace, name: name, watch: w, secrets: newCredentials(w.client.secrets, namespace), opts: opts}
	if err := w.add(ctx, name, l); err != nil {
		clients.leave(w)
		return nil, err
	}
	return l, nil
}

// Key returns the Redis key of the resource as last seen: status.key, the
// effective key the controller publishes ("" until it has; after a
// deletion, the last version's).
func (l *Locker) Key() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.obj.Status.Key
}

// TryAcquire makes one attempt (see lock.Locker.TryAcquire; with
// spec.permits above 1, one attempt at a permit of the semaphore, see
// lock.Semaphore). A resource that now names another lock than leases
// still held fails with ErrRebinding.
func (l *Locker) TryAcquire(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, false, false)
}

// Acquire waits for the key, bounded by ctx (see lock.Locker.Acquire). A
// resource that is not Ready yet (a lock applied together with the
// workload that takes it) is waited for too: it fails with ErrNotReady only
// when ctx ends first. One that now names another lock than leases still
// held waits for them to end (ErrRebinding when ctx ends first).
//
// With spec.permits above 1 it waits for a permit of the semaphore: every
// call takes a permit of its own.
func (l *Locker) Acquire(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, true, false)
}

// AcquireShared waits for a shared hold of the key, as Acquire waits for
// the key (see lock.Locker.AcquireShared: any number of shared holders or
// one exclusive holder, writer-preferring). A semaphore (spec.permits
// above 1) has no shared holds: ErrInvalidConfig.
func (l *Locker) AcquireShared(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, true, true)
}

// TryAcquireShared makes one attempt at a shared hold (see
// lock.Locker.TryAcquireShared and AcquireShared).
func (l *Locker) TryAcquireShared(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, false, true)
}

func (l *Locker) take(ctx context.Context, wait, shared bool) (*lock.Lease, error) {
	b, err := l.bind(ctx, wait)
	if err != nil {
		return nil, err
	}
	var lease *lock.Lease
	switch sem := b.locker.Semaphore(b.key, b.permits); {
	case shared && b.permits > 1:
		err = fmt.Errorf("kube: %s has spec.permits %d, a semaphore, which has no shared holds: %w", b.key, b.permits, lock.ErrInvalidConfig)
	case shared && wait:
		lease, err = b.locker.AcquireShared(ctx, b.key)
	case shared:
		lease, err = b.locker.TryAcquireShared(ctx, b.key)
	case b.permits > 1 && wait:
		lease, err = sem.Acquire(ctx)
	case b.permits > 1:
		lease, err = sem.TryAcquire(ctx)
	case wait:
		lease, err = b.locker.Acquire(ctx, b.key)
	default:
		lease, err = b.locker.TryAcquire(ctx, b.key)
	}
	if err != nil {
		l.unref(b)
		return nil, err
	}
	go func() { // the binding stays open while the lease lives
		<-lease.Done()
		l.unref(b)
	}()
	return lease, nil
}

// bind returns the binding for the resource as last seen, building it when
// the topology or settings changed, with a reference held for the caller.
// It never hands out a binding of another identity than one that still has
// references: with wait it waits for them to end (bounded by ctx), else it
// fails with ErrRebinding. With wait it also waits, bounded by ctx, for a
// resource that is not Ready to become Ready.
func (l *Locker) bind(ctx context.Context, wait bool) (*binding, error) {
	notReady := backoff.Exponential{Min: notReadyRetryFirst, Max: notReadyRetryLongest}
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		obj, gone := l.obj, l.gone
		// Taken with obj: any change after this read closes it.
		changed := l.changes()
		l.mu.Unlock()

		var t target
		var err error
		if gone {
			err = fmt.Errorf("%w: %s/%s was deleted (Acquire waits for it to be created again)", ErrNotReady, l.namespace, l.name)
		} else {
			t, err = resolve(ctx, l.secrets, obj)
		}
		if err != nil {
			if !wait || !errors.Is(err, ErrNotReady) {
				return nil, err
			}
			if werr := waitForChange(ctx, changed, notReady.Next()); werr != nil {
				return nil, fmt.Errorf("%w; gave up waiting: %w", err, werr)
			}
			continue
		}

		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		moved := l.rebinding(t)
		if moved == nil {
			b, err := l.bindLocked(t)
			l.mu.Unlock()
			return b, err
		}
		if !wait {
			l.mu.Unlock()
			return nil, moved
		}
		changed = l.changes() // taken with the leases counted: one ending closes it
		l.mu.Unlock()
		if werr := waitForChange(ctx, changed, 0); werr != nil {
			return nil, fmt.Errorf("%w; gave up waiting: %w", moved, werr)
		}
	}
}

// Bounds of the retry while waiting for a resource to become Ready: the
// watch wakes the wait when the resource changes; the retry covers what it
// does not see (the credentials Secret appearing after the status names it).
const (
	notReadyRetryFirst   = 250 * time.Millisecond
	notReadyRetryLongest = 5 * time.Second
)

// waitForChange waits until changed closes (the resource changed, a lease
// ended, or the Locker closed) or, when retry > 0, retry has passed; it
// returns ctx's cause when ctx ends first.
func waitForChange(ctx context.Context, changed <-chan struct{}, retry time.Duration) error {
	var timeout <-chan time.Time
	if retry > 0 {
		timer := time.NewTimer(retry)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-changed:
	case <-timeout:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// bindLocked returns the binding for t with a reference for the caller,
// building it when t's fingerprint differs from the current one. Callers
// hold l.mu and have checked that no binding of another identity is held.
func (l *Locker) bindLocked(t target) (*binding, error) {
	if fp := t.fingerprint(); l.current == nil || l.current.fingerprint != fp {
		locker, clients, err := t.connect(l.opts, l.secrets.serve)
		if err != nil {
			return nil, err
		}
		l.retire(l.current)
		l.current = &binding{fingerprint: fp, store: t.storeFingerprint(), id: t.id, desc: describe(t.key, &t.conn), key: t.key, permits: t.permits, locker: locker, clients: clients}
	}
	l.current.leases++
	return l.current, nil
}

// rebinding returns an ErrRebinding error when a binding whose identity
// differs from t's still has references, else nil. Callers hold l.mu.
func (l *Locker) rebinding(t target) error {
	var old *binding
	n := 0
	for _, b := range append([]*binding{l.current}, l.retired...) {
		if b != nil && b.leases > 0 && b.id != t.id {
			old = b
			n += b.leases
		}
	}
	if old == nil {
		return nil
	}
	return fmt.Errorf("%w: %s/%s now names %s, but %d lease(s) or acquisition(s) of this process are still on %s: they must end first",
		ErrRebinding, l.namespace, l.name, describe(t.key, &t.conn), n, old.desc)
}

// changes returns a channel that wake closes. Callers hold l.mu.
func (l *Locker) changes() <-chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// wake tells waiting binds that a lease ended, the resource changed or the
// Locker closed. Callers hold l.mu.
func (l *Locker) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// retire stops handing out b; it closes when its last lease ends. Callers hold l.mu.
func (l *Locker) retire(b *binding) {
	if b == nil {
		return
	}
	if b.leases == 0 {
		// No leases: lock.Locker.Close has nothing to release, so nothing
		// to report.
		_ = b.close()
		return
	}
	l.retired = append(l.retired, b)
}

func (l *Locker) unref(b *binding) {
	l.mu.Lock()
	b.leases--
	if b.leases == 0 {
		l.wake()
	}
	retiredAndIdle := false
	if b.leases == 0 && b != l.current {
		for i, r := range l.retired {
			if r == b {
				l.retired = append(l.retired[:i], l.retired[i+1:]...)
				retiredAndIdle = true
				break
			}
		}
	}
	l.mu.Unlock()
	if retiredAndIdle {
		// lock.Locker.Close waits for the last release to reach Redis
		// before the clients close.
		_ = b.close()
	}
}

func (b *binding) close() error {
	err := b.locker.Close()
	redisconn.CloseAll(b.clients)
	if errors.Is(err, lock.ErrClosed) {
		return nil
	}
	return err
}

// Close stops following the resource and closes every connection; leases
// still held are released (lock.Locker.Close).
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.wake()
	bindings := append(l.retired, l.current)
	l.retired, l.current = nil, nil
	l.mu.Unlock()

	l.watch.remove(l.name, l)
	clients.leave(l.watch)
	var errs []error
	for _, b := range bindings {
		if b != nil {
			errs = append(errs, b.close())
		}
	}
	return errors.Join(errs...)
}

// observe records a version of the resource from the watch.
func (l *Locker) observe(dl *v1alpha1.DistributedLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obj, l.gone = dl, false
	l.wake()
}

// deleted records that the watch saw the resource deleted. New
// acquisitions fail with ErrNotReady (Acquire waits) until it is created
// again; leases held run on until they end, as the deletion leaves Redis
// alone.
func (l *Locker) deleted() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gone = true
	l.wake()
}

// Inspect reads the key's holder, remaining TTL and fence counter from Redis
// (never the lock value). The resource must be Ready, and name the lock
// of the leases this Locker holds, if any (else ErrRebinding).
func (l *Locker) Inspect(ctx context.Context) (lock.Holding, error) {
	b, err := l.bind(ctx, false)
	if err != nil {
		return lock.Holding{}, err
	}
	defer l.unref(b)
	return b.locker.Inspect(ctx, b.key)
}

// InspectPermits reads a semaphore's live permits and fence counter from
// Redis (never a value), as lock.Semaphore.Inspect does. The resource must
// be Ready and have spec.permits above 1 (else ErrInvalidConfig: read a
// lock with Inspect), and name the lock of the leases this Locker holds,
// if any (else ErrRebinding).
func (l *Locker) InspectPermits(ctx context.Context) (lock.PermitHolding, error) {
	b, err := l.bind(ctx, false)
	if err != nil {
		return lock.PermitHolding{}, err
	}
	defer l.unref(b)
	if b.permits < 2 {
		return lock.PermitHolding{}, fmt.Errorf("%w: %s/%s is a lock (spec.permits 1), not a semaphore: use Inspect", lock.ErrInvalidConfig, l.namespace, l.name)
	}
	return b.locker.Semaphore(b.key, b.permits).Inspect(ctx)
}

// Resource returns a copy of the DistributedLock as last seen (after a
// deletion, its last version).
func (l *Locker) Resource() *v1alpha1.DistributedLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.obj.DeepCopy()
}

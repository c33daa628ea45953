package lock

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// MaxAllKeys is the most keys TryAcquireAll takes at once.
const MaxAllKeys = protocol.MaxAllKeys

// TryAcquireAll takes every one of keys, or none, in one round trip, or
// returns ErrNotAcquired (a *NotAcquiredError naming the first key found
// held) at once. No other client ever sees some of the keys taken and not
// the others, and callers taking the same keys in any order cannot
// deadlock: nobody holds part of a set while waiting for the rest.
//
// Each key gets a Lease of its own (its fence, renewal and local deadline,
// as TryAcquire's); the MultiLease ends as a whole when any of them ends,
// and then gives the others back. Keys must be distinct, at most
// MaxAllKeys, and on Redis Cluster in one hash slot (else
// ErrKeysAcrossSlots). Not with NewRedlock or a semaphore's keys
// (ErrInvalidConfig; a key a semaphore holds is held). Under
// WithFailoverQuarantine a quarantine on any of the keys holds the whole
// set back, as it holds one key back.
//
// Not guaranteed: a caller that retries TryAcquireAll can starve behind a
// stream of single-key holders, which wait in each key's line and are
// handed the key on release; AcquireAll waits in the lines instead.
// Locker.Close releases its leases one by one, a MultiLease's keys
// included.
func (l *Locker) TryAcquireAll(ctx context.Context, keys ...string) (*MultiLease, error) {
	return l.timedAll(ctx, keys, true, l.tryAcquireAll)
}

// timedAll runs take (one try, or a wait) for keys inside the acquisition
// call's bookkeeping: the Locker's call count, metrics and trace span,
// as acquireTimed does for one key.
func (l *Locker) timedAll(ctx context.Context, keys []string, try bool, take func(context.Context, []string) (*MultiLease, error)) (*MultiLease, error) {
	start := l.cfg.clock.Now()
	ctx = l.tracing.startAcquire(ctx, strings.Join(keys, ","), try)
	var m *MultiLease
	err := l.enter()
	if err == nil {
		m, err = take(ctx, keys)
		l.calls.Done()
	}
	l.metrics.observeAcquire(l.cfg.clock.Now().Sub(start), err)
	var first *Lease
	if m != nil {
		first = m.leases[0]
	}
	l.tracing.endAcquire(ctx, first, err)
	return m, err
}

func (l *Locker) tryAcquireAll(ctx context.Context, keys []string) (*MultiLease, error) {
	s, c, err := l.allClaim(keys)
	if err != nil {
		return nil, err
	}
	sent := l.cfg.clock.Now()
	a, err := s.acquireAll(ctx, keys, c)
	if err != nil {
		return nil, err
	}
	if !a.Acquired {
		return nil, &NotAcquiredError{Key: keys[a.Held], HolderTTL: a.Wait}
	}
	return l.holdAll(ctx, s, keys, c, a, sent)
}

// holdAll starts the leases of keys, all taken by c's value in an attempt
// sent at sent.
func (l *Locker) holdAll(ctx context.Context, s *single, keys []string, c claim, a protocol.AllAttempt, sent time.Time) (*MultiLease, error) {
	validUntil := sent.Add(l.cfg.ttl - l.cfg.drift())
	if !l.cfg.clock.Now().Before(validUntil) {
		for _, k := range keys {
			l.releaseQuietly(target{key: k}, c.value)
		}
		return nil, &NotAcquiredError{Key: keys[0], Reason: "validity ran out before the acquisition completed"}
	}
	leases := make([]*Lease, 0, len(keys))
	for i, k := range keys {
		lease, err := l.hold(ctx, target{key: k}, c.value, c.valueArg, a.Fences[i], sent, validUntil, l.cfg.renewInterval)
		if err != nil { // closed meanwhile: hold gave k back; give back the rest
			for _, rest := range keys[i+1:] {
				l.releaseQuietly(target{key: rest}, c.value)
			}
			for _, held := range leases {
				_ = held.Release(context.WithoutCancel(ctx))
			}
			return nil, err
		}
		leases = append(leases, lease)
	}
	return newMultiLease(leases, s, c.value, l.cfg.closeTimeout), nil
}

// allClaim is the backend that takes keys together (allBackend) and a
// first claim on them, one value for every key.
func (l *Locker) allClaim(keys []string) (*single, claim, error) {
	s, err := l.allBackend(keys)
	if err != nil {
		return nil, claim{}, err
	}
	c, err := l.newClaim(target{key: keys[0]})
	return s, c, err
}

// allBackend is the one-server backend TryAcquireAll runs on, or why it
// cannot run.
func (l *Locker) allBackend(keys []string) (*single, error) {
	s, ok := l.backend.(*single)
	switch {
	case !ok:
		return nil, invalidConfig("TryAcquireAll needs one server (New): a Redlock majority of several keys is not atomic")
	case len(keys) == 0 || len(keys) > MaxAllKeys:
		return nil, invalidConfig("TryAcquireAll takes 1 to %d keys, got %d", MaxAllKeys, len(keys))
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, invalidConfig("TryAcquireAll got key %q twice", k)
		}
		seen[k] = true
		if s.sharded && protocol.KeySlot(k) != protocol.KeySlot(keys[0]) {
			return nil, fmt.Errorf("%w: %q and %q", ErrKeysAcrossSlots, keys[0], k)
		}
	}
	return s, nil
}

// acquireAll runs the all-or-nothing script for keys with value. An
// attempt whose outcome is unknown gives every key back in the
// background; one that was acquired on the master only (WithReplicaAck)
// gives them back at once; either way in one call, as Release does.
func (s *single) acquireAll(ctx context.Context, keys []string, c claim) (protocol.AllAttempt, error) {
	value := c.value
	args := protocol.AcquireArgs{Value: value, TTL: s.ttl, Fencing: s.fencing, Identity: s.identity, Announce: s.announce,
		FIFO: s.fifo, Sharded: s.sharded, Constants: s.constants, ValueArg: c.valueArg, Place: c.place, Queued: c.queued, Window: s.window,
		Quarantine: s.quarantine, Tickets: s.tickets}
	call := protocol.AcquireAllCall(keys, args)
	if c.place > 0 {
		call = protocol.AcquireAllWaitCall(keys, args)
	}
	cmd, wait := s.eval(ctx, keys[0], call)
	a, err := protocol.ParseAllAttempt(cmd, len(keys))
	giveBack := func(ctx context.Context) { _, _ = protocol.ReleaseAll(ctx, s.run, keys, value, s.releaseArgs()) }
	switch {
	case err != nil && !protocol.NotSent(err) && ambiguous(err):
		s.giveBackAsyncWith(keys[0], giveBack)
		fallthrough
	case err != nil:
		return protocol.AllAttempt{}, fmt.Errorf("lock: acquire %q: %w", keys, err)
	case !a.Acquired:
		return a, nil
	}
	if err := s.acked(keys[0], wait); err != nil {
		s.giveBackWith(giveBack)
		return protocol.AllAttempt{}, err
	}
	return a, nil
}

// MultiLease is several keys held together (TryAcquireAll): a Lease per
// key, ended as a whole, and given back as a whole.
type MultiLease struct {
	leases  []*Lease
	backend *single
	value   string
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelCauseFunc
	once    sync.Once
}

func newMultiLease(leases []*Lease, backend *single, value string, timeout time.Duration) *MultiLease {
	m := &MultiLease{leases: leases, backend: backend, value: value, timeout: timeout}
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	for _, lease := range leases {
		context.AfterFunc(lease.Context(), func() { m.end(lease) })
	}
	return m
}

// end ends m when lease ended: with lease's error, and the other keys
// given back at once (a set with a key missing protects nothing).
func (m *MultiLease) end(lease *Lease) {
	m.once.Do(func() {
		m.cancel(lease.Err())
		ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
		defer cancel()
		_ = m.release(ctx)
	})
}

// Leases are the keys' leases, in the order TryAcquireAll got the keys.
func (m *MultiLease) Leases() []*Lease { return m.leases }

// Fences are the keys' fencing tokens, in the order of the keys.
func (m *MultiLease) Fences() []uint64 {
	out := make([]uint64, len(m.leases))
	for i, lease := range m.leases {
		out[i] = lease.Fence()
	}
	return out
}

// Done is closed when the MultiLease ends: released, or any key's lease
// ended.
func (m *MultiLease) Done() <-chan struct{} { return m.ctx.Done() }

// Context is cancelled when Done closes; context.Cause(ctx) equals Err().
func (m *MultiLease) Context() context.Context { return m.ctx }

// Err is nil while every key is held; afterwards ErrReleased after
// Release, else the error of the key's lease that ended first
// (ErrLeaseLost).
func (m *MultiLease) Err() error {
	for _, lease := range m.leases {
		if lease.Err() != nil {
			m.end(lease)
			return context.Cause(m.ctx)
		}
	}
	return nil
}

// Release gives every key still held back in one atomic call, handing
// each to the first waiter in its line. It returns an error matching
// ErrLeaseLost when a key was no longer ours, ErrReleased when called
// again, or the Redis error (the keys then expire with their TTL).
func (m *MultiLease) Release(ctx context.Context) error {
	// Ended here first, so that the leases' own ends, which follow, give
	// nothing back behind this call's back.
	m.once.Do(func() { m.cancel(ErrReleased) })
	return m.release(ctx)
}

// release ends every lease as released and gives back, in one call, the
// keys whose leases were still held.
func (m *MultiLease) release(ctx context.Context) error {
	l := m.leases[0].locker
	l.inflight.RLock()
	defer l.inflight.RUnlock()
	type ending struct {
		lease *Lease
		first bool
		prior error
	}
	var (
		ends       []ending
		keys       []string
		releasedBy error // a lease released before (Release called again)
	)
	for _, lease := range m.leases {
		first, again, prior := lease.endForRelease(ctx)
		if again {
			releasedBy = prior
			continue
		}
		ends = append(ends, ending{lease, first, prior})
		keys = append(keys, lease.key)
	}
	if len(ends) == 0 {
		return releasedBy
	}
	released, err := protocol.ReleaseAll(ctx, m.backend.run, keys, m.value, m.backend.releaseArgs())
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	for i, e := range ends {
		err = cmp.Or(err, e.lease.releasedAs(e.first, e.prior, released[i], nil))
	}
	return err
}

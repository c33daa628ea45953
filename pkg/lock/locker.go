package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"go.opentelemetry.io/otel/trace"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
)

// Locker hands out leases on keys of one Redis deployment (New) or of a set
// of independent nodes (NewRedlock). It is safe for concurrent use and meant
// to be shared by a process: its goroutines contend for a key exactly as
// separate processes do.
type Locker struct {
	cfg     config
	backend backend
	events  *events
	metrics *metrics
	tracing tracing
	// watchdog renews the leases; nil with WithoutWatchdog.
	watchdog *watchdog

	mu      sync.Mutex
	leases  map[*Lease]struct{}
	closed  bool
	closing chan struct{}
	// inflight is read-locked by every release and renewal while it talks
	// to Redis; Close write-locks it so it returns only after they finish
	// and its caller may close the clients.
	inflight sync.RWMutex
	// calls counts the acquisition calls under way (added under mu while
	// open): each may owe the backend a leave or a give-back on its way
	// out, which Close waits for before it closes the backend.
	calls sync.WaitGroup
}

// New returns a Locker on one Redis deployment: a standalone *redis.Client, a
// Sentinel failover client, or a *redis.ClusterClient. It does no I/O; bad
// arguments fail with ErrInvalidConfig.
func New(client redis.UniversalClient, opts ...Option) (*Locker, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b, err := newSingle(client, &cfg)
	if err != nil {
		return nil, err
	}
	return newLocker(cfg, b)
}

func newLocker(cfg config, b backend) (*Locker, error) {
	m, err := newMetrics(cfg.registerer)
	if err != nil {
		return nil, err
	}
	l := &Locker{
		cfg:     cfg,
		backend: b,
		events:  newEvents(b.subscribers(), cfg.clock, cfg.handoffWindow(), cfg.identity, m),
		metrics: m,
		tracing: newTracing(cfg.tracer),
		leases:  map[*Lease]struct{}{},
		closing: make(chan struct{}),
	}
	if cfg.watchdog {
		l.watchdog = newWatchdog(l)
	}
	return l, nil
}

// TryAcquire makes one attempt. When the key is held it fails with a
// *NotAcquiredError (errors.Is(err, ErrNotAcquired)) carrying the holder's
// remaining TTL. ctx bounds the attempt, never the lease.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Lease, error) {
	return l.tryAcquire(ctx, target{key: key})
}

func (l *Locker) tryAcquire(ctx context.Context, t target) (*Lease, error) {
	start := l.cfg.clock.Now()
	ctx = l.tracing.startAcquire(ctx, t.key, true)
	var lease *Lease
	err := l.enter()
	if err == nil {
		defer l.calls.Done()
		var c claim
		if c, err = l.newClaim(t); err == nil {
			lease, _, err = l.try(ctx, t, c)
			l.tracing.tried(ctx, 1, err)
		}
	}
	l.metrics.observeAcquire(l.cfg.clock.Now().Sub(start), err)
	l.tracing.endAcquire(ctx, lease, err)
	return lease, err
}

// enter registers an acquisition call, which must call l.calls.Done when
// it returns; ErrClosed once the Locker is closed.
func (l *Locker) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.calls.Add(1)
	return nil
}

// Acquire waits until it holds key, the Locker is closed, or ctx ends (the
// error then matches ctx's error, and ErrNotAcquired when the key was held).
// It does not poll. A failed attempt takes a place in the key's waiting line
// in Redis (New; see WithFIFO), and a release hands the key to the first
// waiter and tells only that one; a waiter also wakes when the holder's TTL
// has run out (with jitter), or after an error backoff. A waiter that gives
// up leaves the line (and gives back a key handed to it). With NewRedlock
// there is no line: a release wakes one waiter per Locker.
// ctx bounds the wait only, never the lease.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lease, error) {
	return l.acquireTimed(ctx, target{key: key})
}

func (l *Locker) acquireTimed(ctx context.Context, t target) (*Lease, error) {
	start := l.cfg.clock.Now()
	ctx = l.tracing.startAcquire(ctx, t.key, false)
	var lease *Lease
	err := l.enter()
	if err == nil {
		lease, err = l.acquire(ctx, t)
		l.calls.Done() // after acquire's deferred leave was handed to the backend
	}
	l.metrics.observeAcquire(l.cfg.clock.Now().Sub(start), err)
	l.tracing.endAcquire(ctx, lease, err)
	return lease, err
}

func (l *Locker) acquire(ctx context.Context, t target) (lease *Lease, err error) {
	var (
		retry   = backoff.Exponential{Min: l.cfg.backoffMin, Max: l.cfg.backoffMax}
		lastErr error
		warned  warnings
		line    = l.backend.waitingLine()
	)
	key := t.key
	c, err := l.newClaim(t)
	if err != nil {
		return nil, err
	}
	if line {
		c.place = l.cfg.place()
	}
	w, seen := l.events.join(key, !line)
	defer func() {
		if w != nil {
			l.events.done(w, err != nil)
		}
		if err != nil && c.queued {
			l.backend.leave(t, c.value) // its place, or the key if it was just handed to it
		}
	}()
	if w != nil {
		// Others in this process are already waiting (a backend without a
		// Redis-side line): take a place in line. A release passes the
		// lock down the line; if none comes within the backoff bound, try
		// anyway.
		lastErr = &NotAcquiredError{Key: key, Reason: "queued behind this process's waiters"}
		if err := l.sleep(ctx, w, l.cfg.backoffMax, lastErr); err != nil {
			return nil, err
		}
	}
	var attempts seenAttempts
	for n := 1; ; n++ {
		if lease := l.handedOver(ctx, t, c, w, &attempts); lease != nil {
			c.queued = false // the hand-off took it out of the line
			return lease, nil
		}
		tried := l.cfg.clock.Now()
		c.lineFresh = c.lineFreshAt(tried, l.cfg.ttl)
		lease, spent, err := l.try(ctx, t, c)
		l.tracing.tried(ctx, n, err)
		if err == nil {
			c.queued = false // the acquire script took it out of the line
			return lease, nil
		}
		attempts.add(err)
		wait, held, ok := l.waitAfter(key, err, w, &retry, &warned)
		if !ok || ctxEnd(ctx) != nil {
			return nil, waitEnded(ctx, err, lastErr)
		}
		lastErr = err
		if c, err = l.nextClaim(t, c, w, spent, held && line, tried); err != nil {
			return nil, err
		}
		if w == nil {
			// Subscribe only once contended, so an uncontended Acquire costs
			// one round trip. Retry at once when a release or hand-off may
			// have slipped by: before a new subscription was in force, or
			// between the failed attempt and the registration.
			if w, err = l.events.wait(ctx, key, seen, c.value, line); err != nil {
				return nil, err
			}
			if w.retry {
				if _, err := l.sleepUntil(ctx, w.ready, wait, lastErr); err != nil {
					return nil, err
				}
				continue
			}
		}
		if err := l.sleep(ctx, w, wait, lastErr); err != nil {
			return nil, err
		}
	}
}

// waitEnded is the error of an Acquire whose attempt failed with err, a
// failure that ends the wait. When the wait ran out during that attempt
// (its error may be the context's, or a read that timed out at the
// context's deadline), it says so and what the attempts before it found
// (lastErr: a held key, an outage), as a wait that runs out between
// attempts does.
func waitEnded(ctx context.Context, err, lastErr error) error {
	cause := ctxEnd(ctx)
	switch {
	case cause == nil:
		return err
	case errors.Is(err, cause) && lastErr == nil:
		return err
	case errors.Is(err, cause):
		return fmt.Errorf("lock: waiting: %w", errors.Join(err, lastErr))
	}
	return fmt.Errorf("lock: waiting: %w", errors.Join(cause, err, lastErr))
}

// ctxEnd is why ctx ended: its error, or context.DeadlineExceeded once its
// deadline has passed (a read cut by that deadline can return before the
// context's own timer fires); nil while it runs.
func ctxEnd(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// newClaim is a first attempt's claim on t, with a value of its own.
func (l *Locker) newClaim(t target) (claim, error) {
	if err := ValidateKey(t.key); err != nil {
		return claim{}, err
	}
	return l.renewClaim(claim{ttl: l.cfg.ttl})
}

// renewClaim is c with a new value, out of the line.
func (l *Locker) renewClaim(c claim) (claim, error) {
	value, err := protocol.NewValue(l.cfg.identity)
	if err != nil {
		return claim{}, fmt.Errorf("lock: %w", err)
	}
	c.value, c.valueArg, c.queued = value, value, false
	return c, nil
}

// try makes one acquisition attempt and, on success, starts the lease.
// spent reports that c.value must not be used again: it was given back, or
// the attempt's outcome is unknown (a give-back may still reach the server).
// An attempt that provably wrote nothing (a dial error, a LOADING reply)
// spends nothing: the next one keeps the value, and with it the place in line.
func (l *Locker) try(ctx context.Context, t target, c claim) (lease *Lease, spent bool, err error) {
	if l.isClosed() {
		return nil, false, ErrClosed
	}
	// Validity counts from before the request is sent: a reply read after a
	// pause must not be credited with time that already passed.
	key := t.key
	sent := l.cfg.clock.Now()
	a, err := l.backend.acquire(ctx, t, c)
	if err != nil {
		return nil, !a.notRun, err
	}
	if !a.acquired {
		return nil, false, &NotAcquiredError{Key: key, HolderTTL: a.holderTTL, Permits: t.permits, Quarantine: a.quarantine,
			recordedTTL: a.recordedTTL, seen: seenAttempt{sent: sent, counter: a.counter, history: a.history}}
	}
	validUntil := sent.Add(l.cfg.ttl - l.cfg.drift())
	if !l.cfg.clock.Now().Before(validUntil) {
		l.releaseQuietly(t, c.value)
		return nil, true, &NotAcquiredError{Key: key, Permits: t.permits, Reason: "validity ran out before the acquisition completed"}
	}
	lease, err = l.hold(ctx, t, c.value, c.valueArg, a.fence, sent, validUntil, l.cfg.renewInterval)
	if err == nil {
		l.tracing.via(ctx, "attempt")
	}
	return lease, err != nil, err
}

// hold starts the lease of value on t, valid until validUntil (counted
// from sent), whose first renewal is due after firstRenewal; ErrClosed
// (and value given back) when the Locker closed meanwhile. ctx is the
// acquisition's, for its span only: it never bounds the lease.
func (l *Locker) hold(ctx context.Context, t target, value string, valueArg any, fence uint64, sent, validUntil time.Time, firstRenewal time.Duration) (*Lease, error) {
	lease := newLease(l, t, value, fence, sent, validUntil)
	lease.valueArg = valueArg
	lease.acquiredIn = trace.SpanContextFromContext(ctx)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.releaseQuietly(t, value)
		return nil, ErrClosed
	}
	l.leases[lease] = struct{}{}
	l.mu.Unlock()
	l.metrics.held.Inc()
	if log := l.cfg.logger.V(1); log.Enabled() { // checked first: the arguments would be boxed for nothing
		log.Info("lease acquired", "key", t.key, "identity", l.cfg.identity, "fence", fence)
	}
	lease.start(firstRenewal)
	return lease, nil
}

// releaseQuietly gives back a key (or permit) this Locker will not use,
// within a bounded time.
func (l *Locker) releaseQuietly(t target, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.closeTimeout)
	defer cancel()
	if _, err := l.backend.release(ctx, t, value, nil); err != nil {
		l.cfg.logger.Error(err, "releasing an unused acquisition; it expires with its TTL", "key", t.key)
	}
}

func (l *Locker) forget(lease *Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.leases[lease]; ok {
		delete(l.leases, lease)
		l.metrics.held.Dec()
	}
}

func (l *Locker) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close releases every lease still held, makes waiting Acquire calls
// return ErrClosed and waits for them to leave the keys' waiting lines,
// waits for renewals in flight (all within 5s in total), and stops the
// subscription. Later calls of any method return ErrClosed.
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	close(l.closing)
	leases := make([]*Lease, 0, len(l.leases))
	for lease := range l.leases {
		leases = append(leases, lease)
	}
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.closeTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, lease := range leases {
		wg.Go(func() {
			if err := lease.Release(ctx); err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrReleased) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Wait (bounded) for acquisition calls to return — each waiter that
	// gives up owes the line its leave, handed to the backend on its way
	// out — and for renewals and releases still talking to Redis; one
	// stuck past the bound finishes with its client's own timeouts.
	waitGroup(ctx, &l.calls)
	idle := make(chan struct{})
	go func() {
		l.inflight.Lock()
		l.inflight.Unlock() //nolint:staticcheck // SA2001: an empty critical section: waiting for in-flight calls is the point
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	if l.watchdog != nil {
		l.watchdog.close()
	}
	l.events.close()
	l.backend.close(ctx)
	return errors.Join(errs...)
}

// retryable reports errors worth another attempt: the network and the
// server's transient states, not misuse or script errors.
func retryable(err error) bool {
	switch {
	case errors.Is(err, ErrQuorum):
		return true // nodes failed; another attempt may reach a majority
	case errors.Is(err, ErrLibraryMissing):
		return true // whoever loads the library (the operator) is on it
	case errors.Is(err, ErrInvalidConfig), errors.Is(err, ErrClosed), errors.Is(err, ErrNotReplicated),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// A server in a passing state (LOADING, a failover's READONLY…);
		// NOSCRIPT is handled by the script runner.
		return protocol.Refused(err)
	}
	return true
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Lease is one holding of a lock key. It ends when released, when the key is
// found to be no longer ours, or when its local deadline (ValidUntil) passes
// without a successful renewal — whichever comes first, even if Redis never
// answers again. Methods are safe for concurrent use.
type Lease struct {
	locker     *Locker
	target     // the lock key, or the semaphore key and its permits
	value      string
	valueArg   any // value in an interface, made once for its claim (nil: made at release)
	fence      uint64
	acquiredAt time.Time
	// acquiredIn is the acquire span's (WithTracerProvider): later spans
	// of the lease link to it.
	acquiredIn trace.SpanContext

	mu         sync.Mutex
	validUntil time.Time
	err        error // set once, when the lease ends (and the Locker has forgotten it)
	deadline   Timer
	renewing   chan struct{} // non-nil while the watchdog's renewal is in flight
	// released is Release's error, made with the lease: one allocation
	// fewer in every acquire+release.
	released releasedError

	// ctx is made when Done or Context is first called: most leases are
	// released without either (a context and its cancel are 2 of an
	// uncontended acquire+release's allocations).
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newLease(l *Locker, t target, value string, fence uint64, sent, validUntil time.Time) *Lease {
	return &Lease{locker: l, target: t, value: value, fence: fence, acquiredAt: sent, validUntil: validUntil, released: releasedError{key: t.key}}
}

// start arms the local deadline and schedules the watchdog's first
// renewal after firstRenewal.
func (s *Lease) start(firstRenewal time.Duration) {
	clock := s.locker.cfg.clock
	s.mu.Lock()
	s.deadline = clock.AfterFunc(s.validUntil.Sub(clock.Now()), s.checkDeadline)
	s.mu.Unlock()
	if s.locker.watchdog != nil {
		s.locker.watchdog.add(s, firstRenewal)
	}
}

// Key returns the lock key (or the semaphore key, for a permit).
func (s *Lease) Key() string { return s.key }

// Identity returns the holder identity this lease was taken under
// (WithIdentity, or DefaultIdentity): what observers see as the holder.
func (s *Lease) Identity() string { return s.locker.cfg.identity }

// Value returns the ownership proof written to Redis. Treat it as a secret:
// whoever has it can release or renew this lease. Never log it.
func (s *Lease) Value() string { return s.value }

// Fence returns the lease's fencing token: greater than every token handed
// out for this key before (see the package doc for the assumptions), 0 when
// fencing is off. The permits of a semaphore share one counter: a permit's
// token is greater than every token of the semaphore's earlier permits.
func (s *Lease) Fence() uint64 { return s.fence }

// ValidUntil returns the local deadline (with a monotonic clock reading):
// the lease ends then unless a renewal succeeded.
func (s *Lease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// Done is closed when the lease ends: released, lost, or past ValidUntil.
func (s *Lease) Done() <-chan struct{} { return s.Context().Done() }

// Context is cancelled when Done closes; context.Cause(ctx) equals Err().
// Bind the protected work to it.
func (s *Lease) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
		if s.err != nil { // ended before anyone asked: done already
			s.cancel(s.err)
		}
	}
	return s.ctx
}

// Err is nil while the lease is held; afterwards it matches ErrReleased or
// ErrLeaseLost (wrapping the cause). It checks the deadline itself, so it
// never reports a lease held past ValidUntil, even before Done's timer ran.
func (s *Lease) Err() error {
	s.mu.Lock()
	expired := s.err == nil && !s.locker.cfg.clock.Now().Before(s.validUntil)
	s.mu.Unlock()
	if expired {
		// The deadline passed but its timer has not run yet (a busy or
		// just-resumed process): end the lease now rather than report it held.
		s.checkDeadline()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Renew extends the lease by the TTL now (the watchdog does this on its
// own unless WithoutWatchdog). The local deadline moves only on success,
// counted from before the request was sent. A key that is no longer ours
// ends the lease with ErrLeaseLost.
func (s *Lease) Renew(ctx context.Context) error {
	if err := s.Err(); err != nil {
		return err
	}
	return s.renew(ctx)
}

func (s *Lease) renew(ctx context.Context) error {
	ttl, err := s.renewTTL()
	if err != nil {
		return err
	}
	sent := s.locker.cfg.clock.Now()
	ok, err := s.locker.backend.renew(ctx, s.target, s.value, ttl)
	return s.settle(sent, ttl, ok, err)
}

// renewTTL is the TTL a renewal asks for now: the Locker's, cut to what
// WithMaxHold leaves; ErrMaxHoldExceeded when nothing is left.
func (s *Lease) renewTTL() (time.Duration, error) {
	cfg := &s.locker.cfg
	ttl := cfg.ttl
	if cfg.maxHold > 0 {
		left := s.acquiredAt.Add(cfg.maxHold).Sub(cfg.clock.Now())
		if left <= cfg.drift() {
			return 0, fmt.Errorf("%w: held for %v", ErrMaxHoldExceeded, cfg.maxHold)
		}
		ttl = min(ttl, left)
	}
	return ttl, nil
}

// settle applies the answer to a renewal for ttl sent at sent: the local
// deadline moves to sent+ttl (less the drift) on success, a key no longer
// ours ends the lease, an error changes nothing.
func (s *Lease) settle(sent time.Time, ttl time.Duration, ok bool, err error) error {
	cfg := &s.locker.cfg
	if err != nil {
		s.locker.metrics.renewals.WithLabelValues("error").Inc()
		s.locker.tracing.renewFailed(s, sent, err)
		return err
	}
	if !ok {
		s.locker.metrics.renewals.WithLabelValues("not_owner").Inc()
		s.locker.tracing.renewFailed(s, sent, nil)
		lost := fmt.Errorf("%w: key %q is no longer ours", ErrLeaseLost, s.key)
		s.end(lost, "not_owner")
		return lost
	}
	s.locker.metrics.renewals.WithLabelValues("ok").Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		// The deadline passed while the request was in flight: the lease is
		// over here even though Redis extended the key; Release frees it.
		return s.err
	}
	if until := sent.Add(ttl - cfg.drift()); until.After(s.validUntil) {
		s.validUntil = until
		s.deadline.Reset(until.Sub(cfg.clock.Now()))
	}
	return nil
}

// announce marks a watchdog renewal in flight (done closes when it has
// settled), so that Release waits for it; false when the lease has ended.
func (s *Lease) announce(done chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	s.renewing = done
	return true
}

// unannounce ends the renewal announce marked; true while the lease lasts.
func (s *Lease) unannounce(done chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewing == done {
		s.renewing = nil
	}
	return s.err == nil
}

// ended reports that the lease is over (released, lost or abandoned).
func (s *Lease) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// checkDeadline runs when the local deadline timer fires.
func (s *Lease) checkDeadline() {
	cfg := &s.locker.cfg
	s.mu.Lock()
	left := s.validUntil.Sub(cfg.clock.Now())
	if s.err == nil && left > 0 { // extended since the timer was armed
		s.deadline.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	cause := errors.New("local validity deadline passed without a successful renewal")
	reason := "deadline"
	if cfg.maxHold > 0 && cfg.clock.Now().Sub(s.acquiredAt) >= cfg.maxHold-cfg.drift() {
		cause, reason = ErrMaxHoldExceeded, "max_hold"
	}
	s.end(fmt.Errorf("%w: %q: %w", ErrLeaseLost, s.key, cause), reason)
}

// end finishes the lease once with err: timers stop, Done closes.
func (s *Lease) end(err error, reason string) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	s.err = err
	if s.deadline != nil { // nil before start
		s.deadline.Stop()
	}
	l := s.locker
	// Forgotten with err set, before Done can close (below, or in a
	// Context made later): a Close woken by Done must not release it
	// again. Lock order: a Lease's mu, then its Locker's; nothing holds the
	// Locker's while taking a Lease's.
	l.forget(s)
	cancel := s.cancel
	s.mu.Unlock()
	if l.watchdog != nil {
		l.watchdog.dropEnded() // takes the queued leases' mu: not under ours
	}
	if cancel != nil {
		cancel(err)
	}
	l.metrics.holdSeconds.Observe(l.cfg.clock.Now().Sub(s.acquiredAt).Seconds())
	if reason != "" {
		l.metrics.lost.WithLabelValues(reason).Inc()
		l.tracing.lost(s, reason, err)
		l.cfg.logger.Info("lease lost", "key", s.key, "fence", s.fence, "reason", err.Error())
	}
	return true
}

// Abandon ends the lease locally at once without telling Redis: renewal
// stops and the key stays until its TTL runs out, as after a crash. Err
// then matches ErrReleased, and Locker.Close no longer releases it. For
// stepping down without handing over (leader election without
// ReleaseOnCancel).
func (s *Lease) Abandon() {
	s.end(fmt.Errorf("%w: %q abandoned; the key expires with its TTL", ErrReleased, s.key), "")
}

// Release ends the lease at once — locally even if Redis fails — and deletes
// the key if it is still ours. It returns an error matching ErrLeaseLost when
// the key was no longer ours (the lease had already been lost), ErrReleased
// when called again, or the Redis error (the key then expires with its TTL).
func (s *Lease) Release(ctx context.Context) error {
	// Held before the lease ends, so a Close woken by Done waits for the
	// release to reach Redis before its caller closes the clients.
	s.locker.inflight.RLock()
	defer s.locker.inflight.RUnlock()
	first, again, prior := s.endForRelease(ctx)
	if again {
		return prior
	}
	ok, err := s.locker.backend.release(ctx, s.target, s.value, s.valueArg)
	return s.releasedAs(first, prior, ok, err)
}

// endForRelease ends the lease as released and waits (bounded by ctx) for
// an in-flight renewal, which must not outlive the release. first says
// this call ended it; prior is its error; again says it was released
// before (Release then returns prior without asking Redis).
func (s *Lease) endForRelease(ctx context.Context) (first, again bool, prior error) {
	first = s.end(&s.released, "")
	prior = s.Err()
	if !first && errors.Is(prior, ErrReleased) {
		return first, true, prior
	}
	s.mu.Lock()
	renewing := s.renewing
	s.mu.Unlock()
	if renewing != nil {
		select {
		case <-renewing:
		case <-ctx.Done():
		}
	}
	return first, false, prior
}

// releasedAs is Release's result once Redis answered ok, err.
func (s *Lease) releasedAs(first bool, prior error, ok bool, err error) error {
	switch {
	case err != nil:
		return err
	case !first:
		return prior // lost before Release: report how
	case !ok:
		return fmt.Errorf("%w: key %q was no longer ours at release", ErrLeaseLost, s.key)
	}
	if log := s.locker.cfg.logger.V(1); log.Enabled() { // see Locker.hold
		log.Info("lease released", "key", s.key, "fence", s.fence)
	}
	return nil
}

// releasedError is ErrReleased for one key, formatted only when read: every
// release ends its lease with one, and most callers never read it
// (fmt.Errorf would cost two more allocations on every release).
type releasedError struct{ key string }

func (e *releasedError) Error() string { return fmt.Sprintf("%s: %q", ErrReleased, e.key) }

func (e *releasedError) Unwrap() error { return ErrReleased }

package lock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
)

// AcquireAll waits until it holds every one of keys at once, the Locker is
// closed, or ctx ends; then it is TryAcquireAll (the same MultiLease, the
// same limits). A failed attempt takes a place in every key's waiting
// line, with one arrival for the set, and a key released to it, or found
// free with it first in line, is reserved for it: held by a marker that
// is no lock value, which nobody else takes, until it takes its whole set
// or gives up. So nobody who asks for one of its keys after it gets that
// key before it, and two callers for overlapping sets are served in their
// order of arrival in every line alike: no deadlock, and no partial hold
// of either is ever visible. It waits for no more than the keys' holders
// and the waiters that were in their lines before it
// (TestAcquireAllIsNotOvertakenByLaterWaiters).
//
// Not guaranteed: a key it reserved is held by nobody while the rest of
// the set is taken, and others wait for it meanwhile; a caller that dies
// while waiting costs its reserved keys one hand-off window.
func (l *Locker) AcquireAll(ctx context.Context, keys ...string) (*MultiLease, error) {
	return l.timedAll(ctx, keys, false, l.acquireAllWaiting)
}

func (l *Locker) acquireAllWaiting(ctx context.Context, keys []string) (m *MultiLease, err error) {
	s, c, err := l.allClaim(keys)
	if err != nil {
		return nil, err
	}
	c.place = l.cfg.place()
	var (
		retry   = backoff.Exponential{Min: l.cfg.backoffMin, Max: l.cfg.backoffMax}
		waiters []*waiter
		seen    = make([]uint64, len(keys))
		lastErr error
	)
	for i, k := range keys {
		_, seen[i] = l.events.join(k, false)
	}
	defer func() {
		for _, w := range waiters {
			l.events.done(w, err != nil)
		}
		if err != nil && c.queued {
			// Its places and its reserved keys go back, in one call.
			value := c.value
			s.giveBackAsyncWith(keys[0], func(ctx context.Context) {
				_, _ = protocol.ReleaseAll(ctx, s.run, keys, value, s.releaseArgs())
			})
		}
	}()
	for {
		sent := l.cfg.clock.Now()
		a, err := s.acquireAll(ctx, keys, c)
		switch {
		case err == nil && a.Acquired:
			c.queued = false
			return l.holdAll(ctx, s, keys, c, a, sent)
		case err != nil && !retryable(err):
			return nil, err
		case err != nil:
			lastErr = err
			if !protocol.NotRun(err) {
				// Its outcome is unknown and its keys are being given
				// back: go on with a new value, out of the lines.
				if c, err = l.renameAll(c, waiters); err != nil {
					return nil, err
				}
			}
			if err := l.sleepAny(ctx, waiters, retry.Next(), lastErr); err != nil {
				return nil, err
			}
			continue
		}
		retry.Reset()
		c.queued = true
		lastErr = &NotAcquiredError{Key: keys[a.Held], HolderTTL: a.Wait}
		if waiters == nil {
			if waiters, err = l.waitOnAll(ctx, keys, seen, c.value); err != nil {
				return nil, err
			}
		}
		// Its reservations last a hand-off window: it attempts again
		// within half of one, whatever holds the rest of its set.
		wait := l.cfg.handoffWindow() / 2
		if a.Wait > 0 {
			wait = min(wait, a.Wait)
		}
		if err := l.sleepAny(ctx, waiters, wait, lastErr); err != nil {
			return nil, err
		}
	}
}

// waitOnAll registers a waiter for each of keys (seen: what join
// returned for each before the first attempt), named by value.
func (l *Locker) waitOnAll(ctx context.Context, keys []string, seen []uint64, value string) ([]*waiter, error) {
	ws := make([]*waiter, 0, len(keys))
	for i, k := range keys {
		w, err := l.events.wait(ctx, k, seen[i], value, true)
		if err != nil {
			for _, done := range ws {
				l.events.done(done, true)
			}
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// renameAll is c with a new value, out of the lines, its waiters renamed.
func (l *Locker) renameAll(c claim, ws []*waiter) (claim, error) {
	c, err := l.renewClaim(c)
	if err != nil {
		return claim{}, err
	}
	for _, w := range ws {
		l.events.rename(w, c.value)
	}
	return c, nil
}

// sleepAny waits for a wake-up of any of ws, d, or an error when ctx ends
// or the Locker closes. A wake-up it takes is that waiter's (events.done).
func (l *Locker) sleepAny(ctx context.Context, ws []*waiter, d time.Duration, lastErr error) error {
	fired := make(chan struct{})
	t := l.cfg.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(ws)+3)
	for _, ch := range []any{fired, l.closing, ctx.Done()} {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	for _, w := range ws {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.wake)})
	}
	switch i, _, _ := reflect.Select(cases); i {
	case 0:
		return nil
	case 1:
		return ErrClosed
	case 2:
		return fmt.Errorf("lock: waiting: %w", errors.Join(ctx.Err(), lastErr))
	default:
		ws[i-3].holdsWake = true
		return nil
	}
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
)

// Waiting for a key, in one place: how long an Acquire sleeps after a failed
// attempt (waitAfter, sleep), which claim it tries with next (nextClaim),
// how it registers as a waiter (events.wait, join, done), and how the
// messages the Locker's subscriptions deliver (subscriptions.go) wake the
// waiter they concern (released, granted, taken, recheck). Acquire itself,
// in locker.go, is the loop that calls these.

// warnings are what an Acquire call has warned about already: each once.
type warnings struct {
	noTTL, mixedTTL bool
}

// waitAfter is how long to wait after a failed attempt that returned err,
// whether the key was held, and false when err ends the wait.
func (l *Locker) waitAfter(key string, err error, w *waiter, retry *backoff.Exponential, warned *warnings) (wait time.Duration, held, ok bool) {
	var na *NotAcquiredError
	switch {
	case errors.As(err, &na) && na.HolderTTL >= 0:
		w.spent() // someone else took the release this waiter was woken by
		retry.Reset()
		if na.Quarantine > 0 {
			l.metrics.quarantined.Inc()
			l.cfg.logger.Info("the lock's server changed (a failover or a restart): waiting out the failover quarantine", "key", key, "left", na.Quarantine)
		}
		l.checkRecordedTTL(key, na.recordedTTL, &warned.mixedTTL)
		// At least every TTL, so that the waiter keeps its place.
		return min(na.HolderTTL+backoff.Jitter(l.cfg.backoffMin), l.cfg.ttl), true, true
	case errors.As(err, &na):
		// A key without TTL was not written by this library and may
		// stay forever: back off instead of polling it, and say so.
		w.spent()
		if !warned.noTTL {
			warned.noTTL = true
			l.metrics.keysWithoutTTL.Inc()
			l.cfg.logger.Info("lock key exists without a TTL (not set by redlease?); backing off until it is deleted", "key", key)
		}
		return retry.Next(), true, true
	case retryable(err):
		return retry.Next(), false, true
	}
	return 0, false, false
}

// checkRecordedTTL warns, once per Acquire call (warned), when the key's
// epoch record holds another TTL than this Locker's: the quarantine
// assumes one TTL per key, and after a failover that lost the record with
// its key it can only wait for the TTL its next caller brings, which may
// be shorter than a lease the lost server granted (docs/protocol.md).
func (l *Locker) checkRecordedTTL(key string, recorded time.Duration, warned *bool) {
	if recorded <= 0 || recorded == l.cfg.ttl {
		return
	}
	l.metrics.mixedTTLs.Inc()
	if !*warned {
		*warned = true
		l.cfg.logger.Info("the lock's key is used with another TTL than this Locker's: a failover quarantine after its epoch record was lost may wait too little; give every client of the key one TTL",
			"key", key, "ttl", l.cfg.ttl, "recordedTTL", recorded)
	}
}

// nextClaim is the claim for the attempt after a failed one, made at
// tried: c with a new value when its value was spent (given back, or its
// attempt's outcome unknown: never try with it again), leaving the line
// with the old one; else c, queued when the failed attempt took (or kept)
// a place, and with the line kept at tried when that attempt kept it.
func (l *Locker) nextClaim(t target, c claim, w *waiter, spent, queued bool, tried time.Time) (claim, error) {
	if !spent {
		if queued && !c.lineFresh {
			c.lineKept = tried
		}
		c.queued = c.queued || queued
		return c, nil
	}
	if c.queued {
		l.backend.leave(t, c.value)
	}
	c, err := l.renewClaim(c)
	if err != nil {
		return claim{}, err
	}
	l.events.rename(w, c.value)
	return c, nil
}

// sleep waits for w's wake-up, d, or an error when ctx ends or the Locker
// closes. A wake-up it takes is w's to use or to pass on (events.done).
func (l *Locker) sleep(ctx context.Context, w *waiter, d time.Duration, lastErr error) error {
	woken, err := l.sleepUntil(ctx, w.wake, d, lastErr)
	if woken {
		w.holdsWake = true
		testHookWoken()
	}
	return err
}

// sleepUntil returns when wake fires (woken), d passes, or with an error
// when ctx ends or the Locker closes.
func (l *Locker) sleepUntil(ctx context.Context, wake <-chan struct{}, d time.Duration, lastErr error) (woken bool, err error) {
	fired := make(chan struct{})
	t := l.cfg.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	select {
	case <-wake:
		return true, nil
	case <-fired:
		return false, nil
	case <-l.closing:
		return false, ErrClosed
	case <-ctx.Done():
		return false, fmt.Errorf("lock: waiting: %w", errors.Join(ctx.Err(), lastErr))
	}
}

// channelWaiters are the waiters for one key, under the key's events
// channel and, with a waiting line, this Locker's waiter channel of the key
// too (names; events.channels has the entry under both).
type channelWaiters struct {
	names []string
	// sharded: the channels are on sharded pub/sub, on subscription sub
	// (one key's channels share its slot).
	sharded bool
	sub     int
	ready   chan struct{} // closed when a server confirmed every name
	// confirmed: every name was confirmed by a subscription.
	confirmed bool
	// confirmedBy holds the subscriptions (by index in events.subs) that
	// confirmed each name: one confirming again has reconnected.
	confirmedBy map[subscribed]bool
	// releases counts "released" and "granted" messages seen, so a waiter
	// can tell whether one arrived between its failed attempt and its
	// registration.
	releases uint64
	queue    []*waiter
	// byDigest finds the waiter a "granted" message names; recentGrants
	// are the last digests granted, for a waiter registering just after
	// its own hand-off was announced.
	byDigest     map[string]*waiter
	recentGrants [32]string
	grants       int
	idle         Timer // unsubscribes after subscriptionLinger without waiters
	// unconfirmed fires when a key handed to another process's waiter
	// was followed by no other message within the hand-off window.
	unconfirmed Timer
}

// waiter is one Acquire call waiting for a key.
type waiter struct {
	ch string
	// digest names the waiter's value in "granted" messages; "" when the
	// backend has no waiting line.
	digest string
	wake   chan struct{} // buffered 1: a pending wake is never lost
	// ready is closed once the subscription is confirmed: from then on no
	// release can slip by unnoticed.
	ready <-chan struct{}
	// retry says the caller must attempt again before sleeping on wake: its
	// subscription is new (a release may have come before it was in force),
	// or a release arrived since the caller's failed attempt.
	retry bool
	// holdsWake is set (by the waiting goroutine only) when it took a
	// wake-up that no attempt has used yet: if it gives up now, the
	// wake-up goes to the next waiter instead of being lost.
	holdsWake bool
	// grant (under events.mu) is the counted hand-off to this waiter's
	// value with the highest counter heard and not yet taken (takeGrant).
	grant *protocol.Grant
}

// spent records that an attempt after the wake-up found the key taken by
// someone else: the release it announced has been used. w may be nil.
func (w *waiter) spent() {
	if w != nil {
		w.holdsWake = false
	}
}

// wait registers a waiter for key's channel, subscribing if needed. seen is
// what join returned before the caller's failed attempt; value is the
// waiter's claim, named by "granted" messages when line is true.
func (e *events) wait(ctx context.Context, key string, seen uint64, value string, line bool) (*waiter, error) {
	ch := protocol.EventsChannel(key)
	sharded := e.shardedPubSub(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.cancel == nil {
		e.loopCtx, e.cancel = context.WithCancel(context.Background())
	}
	cw := e.channels[ch]
	if cw == nil {
		cw = &channelWaiters{names: []string{ch}, sharded: sharded, ready: make(chan struct{}),
			confirmedBy: map[subscribed]bool{}, byDigest: map[string]*waiter{}}
		if line && !e.waiterChannelsRefused {
			cw.names = append(cw.names, protocol.WaiterChannel(key, e.identity))
		}
		for _, name := range cw.names {
			e.channels[name] = cw
		}
		e.subscribe(ctx, cw)
	}
	if cw.idle != nil {
		cw.idle.Stop()
		cw.idle = nil
	}
	w := &waiter{ch: ch, wake: make(chan struct{}, 1), ready: cw.ready}
	cw.queue = append(cw.queue, w)
	if line {
		// Only a hand-off to this waiter matters: its failed attempt
		// queued it in Redis already.
		w.digest = protocol.ValueDigest(value)
		cw.byDigest[w.digest] = w
		// A release hands shared holds to every reader queued together,
		// each told alike: when more grants came since the attempt than
		// the ring keeps, this waiter's may have left it, and it looks.
		w.retry = !cw.confirmed || slices.Contains(cw.recentGrants[:], w.digest) || cw.releases-seen > uint64(len(cw.recentGrants))
	} else {
		w.retry = !cw.confirmed || cw.releases != seen
	}
	return w, nil
}

// rename gives w (nil: no waiter yet) the name of its new value.
func (e *events) rename(w *waiter, value string) {
	if w == nil || w.digest == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[w.ch]; cw != nil {
		delete(cw.byDigest, w.digest)
		w.digest = protocol.ValueDigest(value)
		cw.byDigest[w.digest] = w
	}
	w.grant = nil // a hand-off to the old value is not the new one's
}

// takeGrant returns (and forgets) the counted hand-off w heard, nil for
// none. w may be nil.
func (e *events) takeGrant(w *waiter) *protocol.Grant {
	if w == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	g := w.grant
	w.grant = nil
	return g
}

// join queues a new Acquire behind this Locker's waiters for key, when
// queueLocally is set (a backend without a Redis-side line) and there are
// any on a confirmed subscription, so that a goroutine that just released
// (or just arrived) does not barge ahead of goroutines already woken or
// waiting: within a Locker, waiters take the lock in arrival order. (With a
// line, the line keeps that order across processes.) Otherwise it returns
// nil and the number of messages seen so far, for wait to tell whether one
// slipped by.
func (e *events) join(key string, queueLocally bool) (*waiter, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.channels) == 0 { // uncontended: no channel name to build
		return nil, 0
	}
	ch := protocol.EventsChannel(key)
	cw := e.channels[ch]
	if cw == nil {
		return nil, 0
	}
	if !queueLocally || !cw.confirmed || len(cw.queue) == 0 {
		return nil, cw.releases
	}
	w := &waiter{ch: ch, wake: make(chan struct{}, 1), ready: cw.ready}
	cw.queue = append(cw.queue, w)
	return w, 0
}

// done unregisters w. A wake-up that w received but did not use — still
// pending, or taken by a caller that gives up (failed) before an attempt
// used it — passes to the next waiter. The channel stays subscribed for
// subscriptionLinger.
func (e *events) done(w *waiter, failed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[w.ch]
	if cw == nil {
		return
	}
	for i, q := range cw.queue {
		if q == w {
			cw.queue = append(cw.queue[:i], cw.queue[i+1:]...)
			break
		}
	}
	if w.digest != "" && cw.byDigest[w.digest] == w {
		delete(cw.byDigest, w.digest)
	}
	select {
	case <-w.wake:
		wakeOldest(cw)
	default:
		if failed && w.holdsWake {
			wakeOldest(cw)
		}
	}
	if len(cw.queue) == 0 && !e.closed && cw.idle == nil {
		cw.idle = e.clock.AfterFunc(subscriptionLinger, func() { e.expire(w.ch, cw) })
	}
}

func wakeOldest(cw *channelWaiters) {
	for _, w := range cw.queue {
		if len(w.wake) == 0 { // one with a pending wake passes this one on
			wake(w)
			return
		}
	}
}

func (e *events) released(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil {
		cw.releases++
		e.stopWatch(cw)
		wakeOldest(cw)
	}
}

// granted handles "granted <digest> [<next>|-] [<counter> <px> h<history> [<held>]]":
// it wakes the waiter the hand-off chose, when it is in this process,
// keeping a counted hand-off for it (takeGrant). The waiter named next is
// now first in line: when it is here, and nothing follows within the
// hand-off window (the chosen waiter may have died with the key), it looks
// again. Waiters elsewhere in the line need do nothing.
func (e *events) granted(ch, payload string) {
	g := protocol.ParseGrant(payload)
	digest, next := g.Digest, g.Next
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[ch]
	if cw == nil {
		return
	}
	cw.releases++
	cw.recentGrants[cw.grants%len(cw.recentGrants)] = digest
	cw.grants++
	e.stopWatch(cw)
	if w := cw.byDigest[digest]; w != nil {
		// Within a history the higher counter is the later grant; a
		// notice of another history replaces the one kept (handedOver
		// weighs either against the waiter's own attempts).
		if g.Counted && (w.grant == nil || g.History != w.grant.History || g.Counter > w.grant.Counter) {
			w.grant = &g
		}
		wake(w)
	}
	if w := cw.byDigest[next]; w != nil && next != "" && !e.closed {
		d := e.window + backoff.Jitter(e.window/4)
		cw.unconfirmed = e.clock.AfterFunc(d, func() { e.recheck(cw, w) })
	}
}

// wake gives w a wake-up unless it has one pending.
func wake(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// taken notes that a key was taken ("acquired", with WithHolderMessages):
// a hand-off was confirmed, so there is nothing to recheck.
func (e *events) taken(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil {
		e.stopWatch(cw)
	}
}

// recheck wakes w, first in line, after a hand-off nobody followed up.
func (e *events) recheck(cw *channelWaiters, w *waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw.byDigest[w.digest] == w {
		wake(w)
	}
}

func (e *events) stopWatch(cw *channelWaiters) {
	if cw.unconfirmed != nil {
		cw.unconfirmed.Stop()
		cw.unconfirmed = nil
	}
}

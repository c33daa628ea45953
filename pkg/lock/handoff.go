package lock

import (
	"context"
	"errors"
	"time"
)

// A hand-off in one round trip (protocol 4, DESIGN §10.1 "Hand-off
// validity"). The release that hands a key (or a permit) to a waiter sets
// its expiry there, px from the grant, and increments the key's hand-off
// counter; every "not acquired" reply reports that counter. An attempt that
// saw a counter lower than the grant's ran before the grant, so its send
// time is a safe start for the waiter's validity, as the send time of an
// ordinary acquisition is: the key is the waiter's from the grant until px
// after it. The latest "not acquired" attempt alone proves nothing: a
// notice delayed past its window, or duplicated, may be for an earlier
// grant after which the waiter's later attempt saw another holder.
//
// "Lower" means something only within one history of the counter
// (protocol 6): the counter goes back when its server restarts from an
// older snapshot or empty, or a replica is promoted without the last
// increments, and then climbs through the same values again, for other
// holders. So every reply and every notice names the counter's history
// (the server's replication ID, new at every start and promotion), and a
// waiter compares a notice only with attempts of the notice's own history.

// seenAttempt is one "not acquired" attempt of a waiter: when it was sent,
// the hand-off counter its reply reported (-1: unknown) and that counter's
// history ("": unknown).
type seenAttempt struct {
	sent    time.Time
	counter int64
	history string
}

// seenAttempts are a waiter's recent "not acquired" attempts, oldest
// first, all of one history: the latest one its replies reported. Within
// a history the counter never goes down, so neither does a later
// attempt's; only the latest attempt per counter value is kept, and only
// the last few (an older attempt's bound would have run out anyway). A
// reply of another history, or a counter lower than the last one seen (a
// counter someone set back by hand), forgets every attempt before it: no
// notice is ever compared with attempts across the change, so a notice
// from before it (delayed, or duplicated) finds no attempt to count from
// and its waiter confirms first.
type seenAttempts struct {
	list []seenAttempt
}

const maxSeenAttempts = 8

// add records err's attempt, when err is a "not acquired" reply that
// reported a counter.
func (s *seenAttempts) add(err error) {
	var na *NotAcquiredError
	if !errors.As(err, &na) || na.seen.sent.IsZero() {
		return
	}
	seen := na.seen
	if n := len(s.list); n > 0 && !testHistoryBlindHandOff && (seen.history != s.list[n-1].history || seen.counter < s.list[n-1].counter) {
		s.list = s.list[:0]
	}
	if seen.counter < 0 || (seen.history == "" && !testHistoryBlindHandOff) {
		return // nothing counts from it, and nothing before it any more
	}
	if n := len(s.list); n > 0 && s.list[n-1].counter == seen.counter {
		s.list[n-1] = seen
		return
	}
	if len(s.list) == maxSeenAttempts {
		s.list = append(s.list[:0], s.list[1:]...)
	}
	s.list = append(s.list, seen)
}

// before is the send time of the latest attempt of history that saw a
// counter lower than counter: it ran before the hand-off that set counter.
func (s *seenAttempts) before(counter int64, history string) (time.Time, bool) {
	for i := len(s.list) - 1; i >= 0; i-- {
		sameHistory := s.list[i].history == history || testHistoryBlindHandOff
		if testNaiveHandOff || (sameHistory && s.list[i].counter < counter) {
			return s.list[i].sent, true
		}
	}
	return time.Time{}, false
}

// handedOver is the lease of a counted hand-off w heard for its value c,
// started without a round trip, or nil when the waiter must confirm first
// (its next attempt, whose acquire confirms a key handed to it): no
// counted hand-off, a backend that does not count them, no watchdog to
// send the confirming write, a semaphore's releaser that allows more
// permits than this caller, no attempt known to precede the grant, or a
// bound too short (the waiter's last attempt before the grant is older than
// the window, or it was paused).
//
// The lease counts from that attempt's send: validity = sent + min(px, ttl)
// − drift, with the fence the grant assigned. Its first renewal, the
// confirming compare-and-PEXPIRE to the full TTL, is due halfway to that
// bound; a lease released before then never sends it. A confirming write
// that finds the key no longer its own loses the lease like any failed
// renewal.
//
// A caller whose ctx ended takes no lease: its next attempt fails, and it
// leaves the line, giving back a key handed to it.
func (l *Locker) handedOver(ctx context.Context, t target, c claim, w *waiter, seen *seenAttempts) *Lease {
	g := l.events.takeGrant(w)
	if g == nil || ctx.Err() != nil {
		return nil
	}
	if !l.backend.countsHandOffs() || l.watchdog == nil || (t.semaphore() && g.Held > t.permits) {
		testHookHandOff(g != nil, false)
		return nil
	}
	sent, ok := seen.before(g.Counter, g.History)
	if !ok {
		testHookHandOff(true, false)
		return nil
	}
	d := min(g.PX, l.cfg.ttl)
	validUntil := sent.Add(d - driftOf(d, l.cfg.driftFactor))
	left := validUntil.Sub(l.cfg.clock.Now())
	if left < g.PX/4 {
		testHookHandOff(true, false)
		return nil
	}
	var fence uint64
	if l.cfg.fencing {
		fence = uint64(g.Counter) //nolint:gosec // G115: ParseGrant keeps only a positive counter
	}
	lease, err := l.hold(ctx, t, c.value, c.valueArg, fence, sent, validUntil, min(left/2, l.cfg.renewInterval))
	if err != nil {
		return nil // closed: the next attempt reports it
	}
	l.tracing.via(ctx, "handoff")
	testHookHandOff(true, true)
	return lease
}

// driftOf is the validity set aside for clock drift over d: d × factor + 2ms.
func driftOf(d time.Duration, factor float64) time.Duration {
	return time.Duration(float64(d)*factor) + driftConstant
}

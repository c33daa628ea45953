package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// renewalLinger is how far ahead of its due time a renewal may be sent
	// to share a round trip with one that is due now (a tenth of the renew
	// interval when that is shorter). Renewing early only counts from the
	// earlier send, so it costs no safety. Leases taken one after another
	// come due a few apart per millisecond: 10 ms gathers ten times as many
	// per round trip as 1 ms did (on Redis Cluster, where each turn is one
	// round trip per master, 10,000 leases cost 9.4-9.7 % of a core instead
	// of 24-27 %: BenchmarkHeldOnCluster).
	renewalLinger = 10 * time.Millisecond
	// maxRenewalBatch bounds one pipeline.
	maxRenewalBatch = 512
)

// watchdog renews the leases of one Locker every renew interval. Every
// lease of a Locker renews at the same interval, so the order in which
// leases were taken or last renewed is the order in which they come due:
// the schedule is a queue, not a heap, and one goroutine with one timer
// serves any number of leases. It wakes when the head comes due and takes
// every lease due within renewalLinger: when the backend batches, they
// renew in one pipeline (10,000 leases renewing every second cost a few
// hundred round trips, no goroutine and no timer per lease; bench/'s held
// scenario measures it), else each renews on its own, as Redlock and
// WithReplicaAck need. A lease goes back in the queue when its renewal
// answered (or failed: errors are retried at the next turn, and the local
// deadline ends the lease if they last). An ended lease is dropped when it
// reaches the head, or sooner when ended leases fill half the queue
// (dropEnded): else a Locker taking and releasing leases fast would keep
// every lease of the last renew interval reachable (20,000 a second and a
// 10 s interval: 200,000 leases, about 120 MB).
type watchdog struct {
	l *Locker

	mu    sync.Mutex
	queue []scheduled // by due time
	ended int         // about how many ended leases the queue holds: counted as they end, less those dropped at the head, 0 after a sweep
	// timer wakes the loop when the head comes due; armed is when it
	// fires (zero: not set). A lease due after that needs nothing, and one
	// due sooner only moves the timer: waking the loop for each lease
	// taken while the queue was empty cost a goroutine switch and a futex
	// call, about half the client's own CPU per uncontended
	// acquire+release.
	timer Timer
	armed time.Time
	kick  chan struct{}
	stop  chan struct{}
	loop  sync.WaitGroup
	once  sync.Once
}

// renewal is one lease's request to extend its hold, in a batch.
type renewal struct {
	target
	value string
	ttl   time.Duration
}

type renewResult struct {
	ok  bool
	err error
}

type scheduled struct {
	lease *Lease
	due   time.Time
}

func newWatchdog(l *Locker) *watchdog {
	return &watchdog{l: l, kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

// add schedules lease's next renewal after d: the renew interval, or less
// for a lease taken from a counted hand-off (its first renewal is the
// confirming write, due within its short first validity). An entry due
// sooner than the queue's tail is inserted in order.
func (w *watchdog) add(lease *Lease, d time.Duration) {
	clock := w.l.cfg.clock
	w.once.Do(func() {
		w.timer = clock.AfterFunc(time.Hour, w.wake) // armed by arm
		w.loop.Go(w.run)
	})
	now := clock.Now()
	due := now.Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	i := len(w.queue)
	for i > 0 && w.queue[i-1].due.After(due) {
		i--
	}
	w.queue = slices.Insert(w.queue, i, scheduled{lease: lease, due: due})
	if i == 0 && (w.armed.IsZero() || due.Before(w.armed)) {
		w.arm(now, d)
	}
}

// arm sets the timer to wake the loop after d; w.mu is held.
func (w *watchdog) arm(now time.Time, d time.Duration) {
	w.timer.Reset(d)
	w.armed = now.Add(d)
}

func (w *watchdog) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watchdog) run() {
	defer w.timer.Stop()
	for {
		if batch := w.due(w.l.cfg.clock.Now()); len(batch) > 0 {
			w.renew(batch)
			continue
		}
		select {
		case <-w.kick:
			testHookWatchdogWoken()
		case <-w.stop:
			return
		}
	}
}

// due takes the leases due by now (give or take renewalLinger), at most
// one batch, dropping the ended ones; with none due, it arms the timer
// for the head (none with an empty queue).
func (w *watchdog) due(now time.Time) (batch []*Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for n < len(w.queue) && len(batch) < maxRenewalBatch {
		e := w.queue[n]
		if e.lease.ended() {
			w.ended = max(w.ended-1, 0)
			n++
			continue
		}
		if wait := e.due.Sub(now); wait > min(renewalLinger, w.l.cfg.renewInterval/10) {
			if len(batch) == 0 {
				w.arm(now, wait)
			}
			break
		}
		batch = append(batch, e.lease)
		n++
	}
	clear(w.queue[:n]) // let ended leases go
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.armed = time.Time{} // the next lease arms it
	}
	return batch
}

// dropEnded counts a lease that has ended, and sweeps the ended leases out
// of the queue once the count passes half its length: a sweep costs the
// queue's length, and about as many leases have ended since the last one,
// so each ending costs about two steps, and ended leases hold about half
// the queue at most. (The count is an estimate: a lease that ends while
// its renewal is in flight is counted but not queued, and one that ends
// between its renewal's answer and its return to the queue goes back
// uncounted until the next sweep.)
func (w *watchdog) dropEnded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended++
	if w.ended <= len(w.queue)/2 {
		return
	}
	live := slices.DeleteFunc(w.queue, func(e scheduled) bool { return e.lease.ended() })
	w.queue, w.ended = live, 0
}

// renew starts the renewals of batch, in one pipeline when the backend
// batches, else one by one, without waiting for them.
func (w *watchdog) renew(batch []*Lease) {
	if s, ok := w.l.backend.(*single); ok && s.batches() {
		go w.renewTogether(s, batch)
		return
	}
	for _, lease := range batch {
		go w.renewAlone(lease)
	}
}

// renewAlone renews one lease in its own request.
func (w *watchdog) renewAlone(lease *Lease) {
	l := w.l
	// The Locker's inflight read lock first, then the announcement, as in
	// Release: a Release waiting for an announced renewal never waits for
	// one that is itself queued behind Close's write lock.
	l.inflight.RLock()
	defer l.inflight.RUnlock()
	done := make(chan struct{})
	if !lease.announce(done) {
		return
	}
	testHookRenewAnnounced()
	ctx, cancel := context.WithDeadline(context.Background(), lease.ValidUntil())
	err := lease.renew(ctx)
	cancel()
	w.settled(lease, done, err)
	close(done)
}

// renewTogether renews batch in one pipeline per node (single.byNode):
// each node's renewals are credited, and rescheduled, when that node
// answers, so a stalled Cluster master delays only its own leases.
func (w *watchdog) renewTogether(s *single, batch []*Lease) {
	l := w.l
	l.inflight.RLock() // see renewAlone
	defer l.inflight.RUnlock()
	var wg sync.WaitGroup
	for _, group := range s.byNode(batch) {
		wg.Go(func() { w.renewGroup(s, group.client, group.leases) })
	}
	wg.Wait()
}

// renewGroup renews leases in one pipeline on client and settles each on
// its reply.
func (w *watchdog) renewGroup(s *single, client redis.Cmdable, batch []*Lease) {
	l := w.l
	done := make(chan struct{})
	leases := make([]*Lease, 0, len(batch))
	reqs := make([]renewal, 0, len(batch))
	var latest time.Time
	for _, lease := range batch {
		ttl, err := lease.renewTTL()
		if err != nil {
			continue // past WithMaxHold: it ends at its deadline, unrenewed
		}
		if !lease.announce(done) {
			continue
		}
		leases = append(leases, lease)
		reqs = append(reqs, renewal{target: lease.target, value: lease.value, ttl: ttl})
		latest = later(latest, lease.ValidUntil())
	}
	if len(leases) == 0 {
		return
	}
	testHookRenewAnnounced()
	// One lease's deadline must not cut the others' renewals short: the
	// batch may run until the last of them.
	ctx, cancel := context.WithDeadline(context.Background(), latest)
	sent := l.cfg.clock.Now()
	results := s.renewBatch(ctx, client, reqs)
	cancel()
	for i, lease := range leases {
		err := lease.settle(sent, reqs[i].ttl, results[i].ok, results[i].err)
		w.settled(lease, done, err)
	}
	close(done)
}

// settled ends lease's turn: it logs a failed renewal that will be retried,
// and schedules the next one while the lease lasts. done is closed by the
// caller once every lease of the turn is settled.
func (w *watchdog) settled(lease *Lease, done chan struct{}, err error) {
	if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrMaxHoldExceeded) {
		w.l.cfg.logger.Info("renewal failed; retrying until the local deadline", "key", lease.key, "error", err.Error())
	}
	if lease.unannounce(done) && !errors.Is(err, ErrMaxHoldExceeded) {
		w.add(lease, w.l.cfg.renewInterval)
	}
}

// close stops the schedule; leases still in it are not renewed again.
func (w *watchdog) close() {
	close(w.stop)
	w.loop.Wait()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package lock

import (
	"context"
	"sync"
	"time"
)

const (
	// renewalLinger is how long the first renewal of a batch waits for
	// others: renewals that come due within it share one round trip. Its
	// validity counts from before the wait, so waiting costs no safety.
	renewalLinger = time.Millisecond
	// maxRenewalBatch bounds one pipeline.
	maxRenewalBatch = 512
)

// renewal is one lease's request to extend its key.
type renewal struct {
	ctx context.Context
	target
	value string
	ttl   time.Duration
	done  chan renewResult // buffered 1
}

type renewResult struct {
	ok  bool
	err error
}

// renewals gathers the watchdogs' renewals of one Locker into batches, so
// that 10,000 leases renewing every second cost a few hundred pipelined
// round trips instead of 10,000 (BenchmarkHeldLeases in bench/ measures
// it). A batch is sent at most renewalLinger after its first request; each
// request still waits on its own context.
type renewals struct {
	backend *single
	reqs    chan *renewal
	stop    chan struct{}
	loop    sync.WaitGroup
	once    sync.Once
}

func newRenewals(b *single) *renewals {
	return &renewals{backend: b, reqs: make(chan *renewal), stop: make(chan struct{})}
}

// renew extends value's hold on t if it is still ours, in the next batch.
func (r *renewals) renew(ctx context.Context, t target, value string, ttl time.Duration) (bool, error) {
	r.once.Do(func() { r.loop.Go(r.run) })
	req := &renewal{ctx: ctx, target: t, value: value, ttl: ttl, done: make(chan renewResult, 1)}
	select {
	case r.reqs <- req:
	case <-ctx.Done():
		return false, ctx.Err()
	case <-r.stop:
		return false, ErrClosed
	}
	select {
	case res := <-req.done:
		return res.ok, res.err
	case <-ctx.Done():
		// The renewal may still extend the key; the lease's deadline does
		// not move without an answer, so that is only a longer TTL.
		return false, ctx.Err()
	}
}

func (r *renewals) run() {
	for {
		var first *renewal
		select {
		case first = <-r.reqs:
		case <-r.stop:
			return
		}
		batch := []*renewal{first}
		linger := time.NewTimer(renewalLinger)
	gather:
		for len(batch) < maxRenewalBatch {
			select {
			case req := <-r.reqs:
				batch = append(batch, req)
			case <-linger.C:
				break gather
			case <-r.stop:
				break gather
			}
		}
		linger.Stop()
		r.send(batch)
	}
}

// send runs one batch under a context that ends with the last of its
// requests' deadlines: one request's short deadline must not cut the
// others (each request stops waiting at its own).
func (r *renewals) send(batch []*renewal) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	r.backend.renewBatch(ctx, batch)
}

// batchContext ends at the latest of batch's deadlines, or never when one
// request has none.
func batchContext(batch []*renewal) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, req := range batch {
		d, ok := req.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		latest = later(latest, d)
	}
	return context.WithDeadline(context.Background(), latest)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// close stops the loop; requests still waiting get ErrClosed.
func (r *renewals) close() {
	close(r.stop)
	r.loop.Wait()
}

package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/pkg/lock"
)

const (
	// minBackoff is the first wait after a failed attempt.
	minBackoff = 10 * time.Millisecond
	// maxBackoff caps the wait between attempts while Redis fails.
	maxBackoff = time.Second
)

// Run makes this process a candidate for the leadership of cfg.Key and
// returns when it is no longer one:
//
//   - nil when ctx ended it: before leading, or after leading, once
//     OnStartedLeading and OnStoppedLeading have returned (and, with
//     ReleaseOnCancel, the key was released);
//   - an error matching ErrLeadershipLost (and lock.ErrLeaseLost) when it led
//     and the lease ended while ctx was live;
//   - an error matching lock.ErrInvalidConfig when cfg is invalid, before
//     any I/O.
//
// Like client-go's LeaderElector.Run, Run does not stand again after leading:
// call it again for that. Errors talking to Redis are retried with backoff
// (logged to cfg.Logger) until ctx ends. No callback runs after Run returns.
func Run(ctx context.Context, cfg Config) error {
	opts, err := cfg.complete()
	if err != nil {
		return err
	}
	locker, err := lock.New(cfg.Client, opts...)
	if err != nil {
		return fmt.Errorf("election: %w", err)
	}
	e := &elector{
		cfg:    cfg,
		locker: locker,
		mutex:  locker.Mutex(cfg.Key),
		log:    cfg.Logger.WithValues("key", cfg.Key, "identity", cfg.Identity),
	}
	// The observer outlives ctx until Run returns, so that OnNewLeader keeps
	// reporting while a leader steps down; it keeps ctx's values.
	obsCtx, stopObserver := context.WithCancel(context.WithoutCancel(ctx))
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		newObserver(e).run(obsCtx)
	}()
	defer func() {
		stopObserver()
		<-observed
	}()

	lease, err := e.campaign(ctx)
	if err != nil || lease == nil {
		e.closeLocker()
		return err
	}
	return e.lead(ctx, lease)
}

// elector is one call of Run.
type elector struct {
	cfg    Config
	locker *lock.Locker
	mutex  *lock.Mutex
	log    logr.Logger
}

// campaign waits for the key (lock.Mutex.Acquire: woken by its release,
// or when the holder's TTL runs out, never polling) until it holds it
// (lease), ctx ends (nil, nil) or an error that no retry can fix occurs;
// other errors are retried after a backoff.
func (e *elector) campaign(ctx context.Context) (*lock.Lease, error) {
	retry := backoff.Exponential{Min: minBackoff, Max: maxBackoff}
	for {
		lease, err := e.mutex.Acquire(ctx)
		switch {
		case err == nil && ctx.Err() != nil:
			// Acquired as ctx ended: give the key back without leading.
			rctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL)
			_ = lease.Release(rctx)
			cancel()
			return nil, nil
		case err == nil:
			return lease, nil
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(err, lock.ErrInvalidConfig), errors.Is(err, lock.ErrClosed):
			return nil, fmt.Errorf("election: %w", err)
		}
		wait := retry.Next()
		e.log.Info("acquisition failed; retrying", "error", err.Error(), "retryIn", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
}

// lead runs one leadership: the callback in its own goroutine, renewals
// here, until the lease ends or ctx ends and the callback has returned.
func (e *elector) lead(ctx context.Context, lease *lock.Lease) error {
	fence := lease.Fence()
	log := e.log.WithValues("fence", fence)
	log.Info("started leading")

	leaderCtx, cancel := context.WithCancelCause(lease.Context())
	defer cancel(nil)
	stopAfter := context.AfterFunc(ctx, func() {
		cancel(fmt.Errorf("election: stepping down: %w", context.Cause(ctx)))
	})
	defer stopAfter()
	callbackDone := make(chan struct{})
	go func() {
		defer close(callbackDone)
		e.cfg.Callbacks.OnStartedLeading(leaderCtx, fence)
	}()

	renew := time.NewTimer(e.cfg.RenewInterval)
	defer renew.Stop()
	// Lead until ctx is done and the callback has returned, renewing all
	// along: a callback winding down after cancellation is still protected.
	stopping, returned := ctx.Done(), (<-chan struct{})(callbackDone)
	for stopping != nil || returned != nil {
		select {
		case <-renew.C:
			if e.renew(lease) {
				renew.Reset(e.cfg.RenewInterval)
			}
		case <-stopping:
			stopping = nil
		case <-returned:
			returned = nil
		case <-lease.Done():
			<-callbackDone
			e.closeLocker()
			e.stoppedLeading()
			if ctx.Err() != nil {
				log.Info("stopped leading; the lease ended while stepping down", "reason", lease.Err().Error())
				return nil
			}
			log.Info("stopped leading: lease lost", "reason", lease.Err().Error())
			return fmt.Errorf("%w: %w", ErrLeadershipLost, lease.Err())
		}
	}

	if e.cfg.ReleaseOnCancel {
		rctx, rcancel := context.WithTimeout(context.Background(), e.cfg.TTL)
		err := lease.Release(rctx)
		rcancel()
		if err != nil {
			// Lost already, or Redis failed: the key expires with its TTL.
			log.Info("releasing on cancel failed; the key expires with its TTL", "error", err.Error())
		}
		e.closeLocker()
		log.Info("stopped leading; released")
	} else {
		// Stop renewing and leave the key to its TTL, as a crash would.
		lease.Abandon()
		e.closeLocker()
		log.Info("stopped leading; the lease runs out with its TTL")
	}
	e.stoppedLeading()
	return nil
}

// renew extends the lease once, bounded by its validity, and reports
// whether to renew again. Failures are retried at the next interval; the
// lease's local deadline ends leadership if they last, and a key that is no
// longer ours ends it at once. A lease at its lock.WithMaxHold limit is not
// renewed again: it ends at its deadline.
func (e *elector) renew(lease *lock.Lease) bool {
	ctx, cancel := context.WithDeadline(context.Background(), lease.ValidUntil())
	defer cancel()
	err := lease.Renew(ctx)
	switch {
	case err == nil || lease.Err() != nil:
		return true // lease.Done ends the loop
	case errors.Is(err, lock.ErrMaxHoldExceeded):
		e.log.Info("the lease reached its maximum hold time; leadership ends at its deadline")
		return false
	default:
		e.log.Info("renewal failed; retrying until the lease's deadline", "error", err.Error())
		return true
	}
}

func (e *elector) stoppedLeading() {
	if f := e.cfg.Callbacks.OnStoppedLeading; f != nil {
		f()
	}
}

// closeLocker closes the Locker when it holds nothing that must outlive Run.
func (e *elector) closeLocker() {
	if err := e.locker.Close(); err != nil && !errors.Is(err, lock.ErrClosed) {
		e.log.Info("closing the locker", "error", err.Error())
	}
}

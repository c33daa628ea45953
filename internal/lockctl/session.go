package lockctl

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redlease/redlease/internal/agent"
)

// waitFlags are --wait, how long a command waits for the lock, and the
// exit codes of a wait that fails.
type waitFlags struct {
	d     time.Duration
	codes exitCodes
}

func (w *waitFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&w.d, "wait", 0, "how long to wait for the lock; 0 fails at once if it is held (default: wait until interrupted)")
	w.codes.register(fs)
}

// stopSignals are the signals that ask lockctl to stop: they cancel the wait
// for the lock and afterwards are the command's to handle (forward, or stop
// holding). SIGHUP and SIGQUIT are among them because their default action
// would kill lockctl and leave its child running.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// session is a command's hold on a lock: the lock it opened, the lease, the
// stopSignals received, and the exit codes of a failed wait.
type session struct {
	*locker
	hold    hold
	signals chan os.Signal
	codes   exitCodes
	metrics *httpServer // --metrics-addr; nil without
}

// takeLock opens the target and acquires as --wait says; go-redis's log
// lines name the lock from then on. The caller closes the session.
func takeLock(cmd *cobra.Command, target *targetFlags, wait waitFlags, log *redisLog) (*session, error) {
	s := &session{signals: make(chan os.Signal, 4), codes: wait.codes}
	if addr := target.take.metricsAddr; addr != "" {
		// Before the wait: a waiting process's metrics are scraped too.
		reg, srv, err := serveMetrics(addr, cmd.ErrOrStderr())
		if err != nil {
			return nil, err
		}
		target.take.metrics, s.metrics = reg, srv
	}
	signal.Notify(s.signals, stopSignals...)
	l, err := target.open(cmd.Context())
	if err != nil {
		signal.Stop(s.signals)
		s.metrics.close()
		return nil, err
	}
	s.locker = l
	log.naming(l.Key())
	if s.hold, err = s.acquire(cmd.Context(), cmd.Flags().Changed("wait"), wait.d); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// acquire waits as --wait says, cancelled by any of stopSignals.
func (s *session) acquire(ctx context.Context, waitSet bool, wait time.Duration) (hold, error) {
	stopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.signals:
			cancel()
		case <-stopCtx.Done():
		}
	}()
	var (
		h   hold
		err error
	)
	waitCtx := stopCtx
	switch {
	case waitSet && wait <= 0:
		h, err = s.take(stopCtx, false)
	case waitSet:
		var c context.CancelFunc
		waitCtx, c = context.WithTimeout(stopCtx, wait)
		defer c()
		h, err = s.take(waitCtx, true)
	default:
		h, err = s.take(stopCtx, true)
	}
	if err != nil {
		return nil, s.notAcquired(ctx, err, wait, errors.Is(waitCtx.Err(), context.DeadlineExceeded))
	}
	return h, nil
}

// release gives the lock back within agent.ReleaseTimeout.
func (s *session) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), agent.ReleaseTimeout)
	defer cancel()
	return s.hold.Release(ctx)
}

func (s *session) close() {
	signal.Stop(s.signals)
	_ = s.Close() // the locker's Close: the lease is released or lost by now, nothing is left to undo
	s.metrics.close()
}

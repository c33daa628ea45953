package lockctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// releaseTimeout bounds the release a command makes on its way out; past
// it the key expires with its TTL.
const releaseTimeout = 5 * time.Second

// waitFlag is --wait: how long a command waits for the lock.
type waitFlag struct{ d time.Duration }

func (w *waitFlag) register(fs *pflag.FlagSet) {
	fs.DurationVar(&w.d, "wait", 0, "how long to wait for the lock; 0 fails at once if it is held (default: wait until interrupted)")
}

// stopSignals are the signals that ask lockctl to stop: they cancel the wait
// for the lock and afterwards are the command's to handle (forward, or stop
// holding). SIGHUP and SIGQUIT are among them because their default action
// would kill lockctl and leave its child running.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// session is a command's hold on a lock: the lock it opened, the lease, and
// the stopSignals received.
type session struct {
	*locker
	lease   *lock.Lease
	signals chan os.Signal
}

// takeLock opens the target and acquires as --wait says. The caller closes
// the session.
func takeLock(cmd *cobra.Command, target *targetFlags, wait waitFlag) (*session, error) {
	s := &session{signals: make(chan os.Signal, 4)}
	signal.Notify(s.signals, stopSignals...)
	l, err := target.open(cmd.Context())
	if err != nil {
		signal.Stop(s.signals)
		return nil, err
	}
	s.locker = l
	if s.lease, err = s.acquire(cmd.Context(), cmd.Flags().Changed("wait"), wait.d); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// acquire waits as --wait says, cancelled by any of stopSignals.
func (s *session) acquire(ctx context.Context, waitSet bool, wait time.Duration) (*lock.Lease, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	if waitSet && wait <= 0 {
		return s.TryAcquire(ctx)
	}
	if waitSet {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, wait)
		defer c()
	}
	lease, err := s.Acquire(ctx)
	// A lock that never became Ready within --wait is not Ready (exit 5),
	// not held.
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kube.ErrNotReady) {
		return nil, exit(ExitNotAcquired, fmt.Errorf("%s still held after --wait %v: %w", s.Key(), wait, err))
	}
	return lease, err
}

// release gives the lock back within releaseTimeout.
func (s *session) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return s.lease.Release(ctx)
}

func (s *session) close() {
	signal.Stop(s.signals)
	_ = s.Close() // the locker's Close: the lease is released or lost by now, nothing is left to undo
}

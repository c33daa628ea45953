package lockctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/pkg/lock"
)

func newRunCommand(stderr io.Writer) *cobra.Command {
	var (
		target targetFlags
		wait   time.Duration
		grace  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run (--lock NAMESPACE/NAME | --redis URL --key K) [--wait D] -- COMMAND [ARGS...]",
		Short: "Run a command while holding the lock",
		Long: `Acquire the lock, run COMMAND while the lease is renewed, release it when
COMMAND exits, and exit with COMMAND's exit code.

COMMAND gets LOCK_KEY, LOCK_FENCE (pass it to the store you write to, so it
can refuse a stale holder) and LOCK_HOLDER in its environment — never the
lock value: environments are readable in /proc.

If the lease is lost while COMMAND runs (Redis unreachable past the TTL, the
key taken from outside), COMMAND gets SIGTERM, then SIGKILL after --grace,
and lockctl exits 4. SIGINT and SIGTERM sent to lockctl are forwarded to
COMMAND.`,
		Example: `  lockctl run --lock billing/nightly-settlement --wait 5m -- ./settle --date today
  lockctl run --redis redis://localhost:6379 --key reports --ttl 30s -- make report`,
		Args: usage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return exit(ExitUsage, errors.New("put the command after --, e.g. lockctl run --lock ns/name -- ./job"))
			}
			waitSet := cmd.Flags().Changed("wait")
			return run(cmd.Context(), stderr, &target, waitSet, wait, grace, args)
		},
	}
	target.register(cmd.Flags())
	cmd.Flags().DurationVar(&wait, "wait", 0, "how long to wait for the lock; 0 fails at once if it is held (default: wait until interrupted)")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "after a lost lease, how long COMMAND gets between SIGTERM and SIGKILL")
	return cmd
}

func run(ctx context.Context, stderr io.Writer, target *targetFlags, waitSet bool, wait, grace time.Duration, argv []string) error {
	// Signals that arrive while waiting for the lock cancel the wait; once
	// the child runs they are forwarded to it instead.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)

	l, err := target.open(ctx)
	if err != nil {
		return err
	}
	defer l.Close()

	lease, err := acquire(ctx, l, signals, waitSet, wait)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			fmt.Fprintf(stderr, "lockctl: releasing %s: %v (it expires with its TTL)\n", l.Key(), err)
		}
	}()

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(),
		"LOCK_KEY="+l.Key(),
		"LOCK_FENCE="+strconv.FormatUint(lease.Fence(), 10),
		"LOCK_HOLDER="+lock.IdentityFromValue(lease.Value()),
	)
	if err := child.Start(); err != nil {
		return exit(ExitNoChild, fmt.Errorf("starting %s: %w", argv[0], err))
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	for {
		select {
		case err := <-exited:
			return childExit(err)
		case sig := <-signals:
			_ = child.Process.Signal(sig)
		case <-lease.Done():
			fmt.Fprintf(stderr, "lockctl: lease on %s lost while %s ran: %v; stopping it\n", l.Key(), argv[0], lease.Err())
			_ = child.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(grace):
				_ = child.Process.Kill()
				<-exited
			}
			return exit(ExitLeaseLost, fmt.Errorf("lease lost: %w", lease.Err()))
		}
	}
}

// acquire waits as --wait says, cancelled by SIGINT/SIGTERM.
func acquire(ctx context.Context, l locker, signals <-chan os.Signal, waitSet bool, wait time.Duration) (*lock.Lease, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	if waitSet && wait <= 0 {
		return l.TryAcquire(ctx)
	}
	if waitSet {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, wait)
		defer c()
	}
	lease, err := l.Acquire(ctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, exit(ExitNotAcquired, fmt.Errorf("%s still held after --wait %v: %w", l.Key(), wait, err))
	}
	return lease, err
}

// childExit turns the child's end into lockctl's exit: its code, or 128+N
// for a signal N, as shells report it.
func childExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exit(128+int(ws.Signal()), fmt.Errorf("command killed by %v", ws.Signal()))
		}
		return exit(ee.ExitCode(), nil)
	}
	return exit(ExitError, err)
}

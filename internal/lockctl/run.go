package lockctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/pkg/lock"
)

func newRunCommand(stderr io.Writer) *cobra.Command {
	var (
		target targetFlags
		wait   waitFlag
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

COMMAND runs in its own process group, with everything it starts. If the
lease is lost while COMMAND runs (Redis unreachable past the TTL, the key
taken from outside), the whole group gets SIGTERM, then SIGKILL after --grace,
and lockctl exits 4. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to lockctl end
a wait for the lock, and while COMMAND runs are forwarded to its group: a
terminal's Ctrl-C reaches lockctl, which forwards it (COMMAND, outside the
terminal's foreground group, cannot read the terminal). If lockctl itself is
SIGKILLed, the kernel kills COMMAND; COMMAND's own children may survive
unless lockctl's death ends their container.`,
		Example: `  lockctl run --lock billing/nightly-settlement --wait 5m -- ./settle --date today
  lockctl run --redis redis://localhost:6379 --key reports --ttl 30s -- make report`,
		Args: usage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return exit(ExitUsage, errors.New("put the command after --, e.g. lockctl run --lock ns/name -- ./job"))
			}
			s, err := takeLock(cmd, &target, wait)
			if err != nil {
				return err
			}
			defer s.close()
			return run(s, stderr, grace, args)
		},
	}
	target.register(cmd.Flags())
	wait.register(cmd.Flags())
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "after a lost lease, how long COMMAND's process group gets between SIGTERM and SIGKILL")
	return cmd
}

// run starts the child under the session's lease and supervises it.
func run(s *session, stderr io.Writer, grace time.Duration, argv []string) error {
	lease, l := s.lease, s.locker
	defer func() {
		if err := s.release(); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			printf(stderr, "lockctl: releasing %s: %v (it expires with its TTL)\n", l.Key(), err)
		}
	}()

	child := exec.Command(argv[0], argv[1:]...) //nolint:gosec,noctx // G204: running the user's COMMAND is what `lockctl run` is for; noctx: COMMAND is stopped through its process group (stopGroup, --grace), never by a context killing the leader alone
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(),
		"LOCK_KEY="+l.Key(),
		"LOCK_FENCE="+strconv.FormatUint(lease.Fence(), 10),
		"LOCK_HOLDER="+lease.Identity(),
	)
	exited, err := startChild(child)
	if err != nil {
		return exit(ExitNoChild, fmt.Errorf("starting %s: %w", argv[0], err))
	}
	pgid := child.Process.Pid // the child leads its own group

	for {
		select {
		case err := <-exited:
			return childExit(err)
		case sig := <-s.signals:
			_ = signalGroup(pgid, sig.(syscall.Signal)) // the session asks only for syscall signals
		case <-lease.Done():
			printf(stderr, "lockctl: lease on %s lost while %s ran: %v; stopping it\n", l.Key(), argv[0], lease.Err())
			stopGroup(pgid, exited, grace)
			return exit(ExitLeaseLost, fmt.Errorf("lease lost: %w", lease.Err()))
		}
	}
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

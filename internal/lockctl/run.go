package lockctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/pkg/lock"
)

func newRunCommand(stderr io.Writer, log *redisLog) *cobra.Command {
	var (
		target    targetFlags
		wait      waitFlags
		grace     time.Duration
		readyAddr string
	)
	cmd := &cobra.Command{
		Use:   "run (--lock NAMESPACE/NAME... | --redis URL --key K... [--permits N]) [--shared] [--wait D] [--conflict-exit-code N] [--unavailable-exit-code N] [--ready-addr ADDR] [--metrics-addr ADDR] -- COMMAND [ARGS...]",
		Short: "Run a command while holding the lock",
		Long: `Acquire the lock, run COMMAND while the lease is renewed, release it when
COMMAND exits, and exit with COMMAND's exit code.

Without the lock, lockctl exits 3 when another holder kept it until --wait
ran out (or at once with --wait 0), 6 when Redis could not be reached, did
not answer or refused (auth, ACL), 5 when the DistributedLock is not Ready;
--conflict-exit-code and --unavailable-exit-code choose other codes for
the first two, so that COMMAND's own codes never collide with them.

COMMAND gets LOCK_KEY, LOCK_FENCE (pass it to the store you write to, so it
can refuse a stale holder) and LOCK_HOLDER in its environment — never the
lock value: environments are readable in /proc. A DistributedLock with
spec.permits above 1 (or --permits N with --redis) is a semaphore: up to N
runs hold it at once, each with a permit and a fence of its own. With
--shared, any number of shared runs hold the lock at once, or one run
without --shared, never both (a read/write lock: the writer preferred);
COMMAND then also gets LOCK_SHARED=true.

Several --lock (DistributedLocks of one store and namespace, with the same
lease settings) or several --key (with one --redis deployment, not
Redlock) are taken all or none, exclusively: no partial hold is ever
visible, two runs that name the same locks in different orders never
deadlock, and a waiting run is not overtaken by later ones. COMMAND gets
LOCK_KEY and LOCK_FENCE as space-separated lists, in the order of the
flags; losing any of the locks stops COMMAND as a lost lease does.

COMMAND runs in its own process group, with everything it starts. If the
lease is lost while COMMAND runs (Redis unreachable past the TTL, the key
taken from outside, or held for its max hold: --max-hold with --redis, a
DistributedLock's spec.maxHold), the whole group gets SIGTERM, then SIGKILL
after --grace, and lockctl exits 4. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to lockctl end
a wait for the lock, and while COMMAND runs are forwarded to its group: a
terminal's Ctrl-C reaches lockctl, which forwards it (COMMAND, outside the
terminal's foreground group, cannot read the terminal). If lockctl itself is
SIGKILLed, the kernel kills COMMAND; COMMAND's own children may survive
unless lockctl's death ends their container.

With --ready-addr, lockctl serves GET /readyz: 200 only while COMMAND runs
under a held lease; 503 while it waits for the lock, once SIGTERM, SIGINT or
SIGQUIT came (SIGHUP is only forwarded), once the lease is lost and once
COMMAND has exited. GET /livez answers 200 while lockctl runs. Replicas of a
Deployment that probe /readyz have one Ready pod, the holder: active/standby
without code changes. Without --wait, a standby waits until it is stopped.

With --metrics-addr, lockctl serves GET /metrics: the lock's metrics
(redlease_lock_*: leases held, acquisitions, renewals, leases lost) and the
process's, for Prometheus, from before the wait until it exits.`,
		Example: `  lockctl run --lock billing/nightly-settlement --wait 5m -- ./settle --date today
  lockctl run --redis redis://localhost:6379 --key reports --ttl 30s -- make report
  lockctl run --redis redis://localhost:6379 --key reindex --max-hold 2h -- ./reindex   # stopped, exit 4, if still running after 2h
  lockctl run --lock shop/checkout-leader --ready-addr :8090 -- /app/checkout
  lockctl run --redis redis://localhost:6379 --key exports --permits 3 -- ./export   # at most 3 at once
  lockctl run --lock shop/catalog --shared -- ./serve-snapshot   # many at once; a run without --shared waits for them all
  lockctl run --lock bank/account-17 --lock bank/account-42 -- ./transfer 17 42   # both or neither`,
		Args:    usage(cobra.MinimumNArgs(1)),
		PreRunE: func(*cobra.Command, []string) error { return wait.codes.validate() },
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return exit(ExitUsage, errors.New("put the command after --, e.g. lockctl run --lock ns/name -- ./job"))
			}
			var ready *readiness // nil without --ready-addr
			if readyAddr != "" {
				// Before the wait: a standby answers 503, not "connection
				// refused", and /livez 200.
				var err error
				if ready, err = serveReadiness(readyAddr, stderr); err != nil {
					return err
				}
				defer ready.close()
			}
			s, err := takeLock(cmd, &target, wait, log)
			if err != nil {
				return err
			}
			defer s.close()
			return run(s, stderr, grace, args, ready)
		},
	}
	target.registerRun(cmd.Flags())
	wait.register(cmd.Flags())
	cmd.Flags().BoolVar(&target.shared, "shared", false, "take the lock shared: any number of shared runs hold it at once, or one run without --shared, never both; once a run without --shared waits, new shared runs wait behind it (LOCK_FENCE is then the lock's fence as the grant found it, not a new one)")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "after a lost lease, how long COMMAND's process group gets between SIGTERM and SIGKILL")
	cmd.Flags().StringVar(&readyAddr, "ready-addr", "", "serve GET /readyz (200 only while COMMAND runs under a held lease, else 503) and /livez (200 while lockctl runs) on this address, e.g. :8090, for a readinessProbe")
	return cmd
}

// run starts the child under the session's lease and supervises it;
// ready (nil without --ready-addr) says 200 only while the child runs
// under the lease.
func run(s *session, stderr io.Writer, grace time.Duration, argv []string, ready *readiness) error {
	held, l := s.hold, s.locker
	defer func() {
		if err := s.release(); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			printf(stderr, "lockctl: releasing %s: %v (it expires with its TTL)\n", l.Key(), err)
		}
	}()

	child := exec.Command(argv[0], argv[1:]...) //nolint:gosec,noctx // G204: running the user's COMMAND is what `lockctl run` is for; noctx: COMMAND is stopped through its process group (stopGroup, --grace), never by a context killing the leader alone
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(), held.env()...)
	exited, err := startChild(child)
	if err != nil {
		return exit(ExitNoChild, fmt.Errorf("starting %s: %w", argv[0], err))
	}
	pgid := child.Process.Pid // the child leads its own group
	// Deferred after the release above, so it runs before it: readiness
	// ends before the lease is given back, on every way out.
	defer ready.stop(argv[0] + " exited")
	ready.serving(held)

	for {
		select {
		case err := <-exited:
			return childExit(err)
		case sig := <-s.signals:
			if sig != syscall.SIGHUP { // often "reload": COMMAND may well go on
				ready.stop(fmt.Sprintf("stopping (%v)", sig))
			}
			_ = signalGroup(pgid, sig.(syscall.Signal)) // the session asks only for syscall signals
		case <-held.Done():
			ready.stop("the lease was lost")
			printf(stderr, "lockctl: lease on %s lost while %s ran: %v; stopping it\n", l.Key(), argv[0], lostBecause(held.Err()))
			stopGroup(pgid, exited, grace)
			return exit(ExitLeaseLost, fmt.Errorf("lease lost: %w", held.Err()))
		}
	}
}

// lostBecause is why a lease ended, for its message: a lease at its max
// hold is said to be so, as it ended by design and not by a fault.
func lostBecause(err error) string {
	if errors.Is(err, lock.ErrMaxHoldExceeded) {
		return err.Error() + " (the cap that --max-hold or the DistributedLock's spec.maxHold sets; renewals never extend it)"
	}
	return err.Error()
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

package lockctl

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/pkg/lock"
)

// newAcquireCommand holds the lock for a while: for trying things out, and
// for seeing what waiters do.
func newAcquireCommand(stdout io.Writer, log *redisLog) *cobra.Command {
	var (
		target targetFlags
		hold   time.Duration
		wait   waitFlags
	)
	cmd := &cobra.Command{
		Use:     "acquire (--lock NAMESPACE/NAME | --redis URL --key K) [--hold D] [--wait D] [--conflict-exit-code N] [--unavailable-exit-code N]",
		Short:   "Debugging: take the lock, hold it (renewed) for --hold or until interrupted, release it",
		Args:    usage(cobra.NoArgs),
		PreRunE: func(*cobra.Command, []string) error { return wait.codes.validate() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := takeLock(cmd, &target, wait, log)
			if err != nil {
				return err
			}
			defer s.close()
			lease := s.hold.(leaseHold) // acquire takes one lock: its --lock and --key are single
			printf(stdout, "acquired %s: holder %s, fence %d\n", s.Key(), lease.Identity(), lease.Fence())
			var timeout <-chan time.Time
			if hold > 0 {
				timeout = time.After(hold)
			}
			select {
			case <-timeout:
			case <-s.signals:
			case <-lease.Done():
				return exit(ExitLeaseLost, fmt.Errorf("lease lost: %w", lease.Err()))
			}
			if err := s.release(); err != nil {
				if errors.Is(err, lock.ErrLeaseLost) {
					return exit(ExitLeaseLost, err)
				}
				return err
			}
			printf(stdout, "released %s\n", s.Key())
			return nil
		},
	}
	target.registerTake(cmd.Flags())
	cmd.Flags().DurationVar(&hold, "hold", 0, "how long to hold the lock (default: until interrupted)")
	wait.register(cmd.Flags())
	return cmd
}

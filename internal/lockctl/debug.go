package lockctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/pkg/lock"
)

// newAcquireCommand holds the lock for a while: for trying things out, and
// for seeing what waiters do.
func newAcquireCommand(stdout io.Writer) *cobra.Command {
	var (
		target targetFlags
		hold   time.Duration
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "acquire (--lock NAMESPACE/NAME | --redis URL --key K) [--hold D] [--wait D]",
		Short: "Debugging: take the lock, hold it (renewed) for --hold or until interrupted, release it",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			signals := make(chan os.Signal, 2)
			signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(signals)
			l, err := target.open(cmd.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			lease, err := acquire(cmd.Context(), l, signals, cmd.Flags().Changed("wait"), wait)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "acquired %s: holder %s, fence %d\n", l.Key(), lock.IdentityFromValue(lease.Value()), lease.Fence())
			var timeout <-chan time.Time
			if hold > 0 {
				timeout = time.After(hold)
			}
			select {
			case <-timeout:
			case <-signals:
			case <-lease.Done():
				return exit(ExitLeaseLost, fmt.Errorf("lease lost: %w", lease.Err()))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := lease.Release(ctx); err != nil {
				if errors.Is(err, lock.ErrLeaseLost) {
					return exit(ExitLeaseLost, err)
				}
				return err
			}
			fmt.Fprintf(stdout, "released %s\n", l.Key())
			return nil
		},
	}
	target.register(cmd.Flags())
	cmd.Flags().DurationVar(&hold, "hold", 0, "how long to hold the lock (default: until interrupted)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "how long to wait for the lock; 0 fails at once (default: wait until interrupted)")
	return cmd
}

package lockctl

import (
	"strconv"

	"github.com/spf13/cobra"
)

// Exit codes (docs/lockctl.md). `run` otherwise exits with the child's code,
// or 128+N when the child was killed by signal N, as shells do. `run` and
// `acquire` can exit with other codes than ExitNotAcquired and
// ExitUnavailable (--conflict-exit-code, --unavailable-exit-code), so that
// COMMAND's own codes never collide with them.
const (
	ExitOK          = 0
	ExitError       = 1   // Kubernetes errors, anything unexpected
	ExitUsage       = 2   // bad flags or arguments
	ExitNotAcquired = 3   // the lock was held and --wait ran out (or was 0); default of --conflict-exit-code
	ExitLeaseLost   = 4   // run: the lease ended while the child ran; the child was terminated
	ExitNotReady    = 5   // the DistributedLock is not Ready
	ExitUnavailable = 6   // Redis unreachable, not answering or refusing (auth, ACL); default of --unavailable-exit-code
	ExitNoChild     = 127 // run: the command could not be started
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status " + strconv.Itoa(e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exit(code int, err error) error { return &exitError{code: code, err: err} }

// usage marks cobra's argument errors as usage errors (exit 2).
func usage(check func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return exit(ExitUsage, err)
		}
		return nil
	}
}

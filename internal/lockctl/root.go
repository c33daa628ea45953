// Package lockctl is the lockctl command line: run a command under a
// distributed lock, inspect a lock, and take one by hand for debugging.
// cmd/lockctl only calls Main.
package lockctl

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redlease/redlease/internal/version"
)

// NewCommand returns the lockctl command tree writing to stdout and stderr.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	var verbosity int
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "Distributed locks on Redis, from the command line",
		Long: `lockctl takes redlease locks: declared by a DistributedLock resource
(--lock [NAMESPACE/]NAME, through the Kubernetes API, found as kubectl finds
objects: --kubeconfig, --context, -n), or directly on Redis (--redis URL
--key K; several URLs mean Redlock over independent nodes).
'lockctl check install' checks an installation of the operator, 'lockctl
rbac' prints the Role a pod needs for its locks, 'lockctl version' the
versions of lockctl and of what the cluster serves, 'lockctl get' the
locks of a namespace. Installed as kubectl-redlease (the release ships
it), lockctl is the kubectl plugin 'kubectl redlease'.

Exit codes: 0 success; 1 error (check: a check did not pass); 2 usage;
3 lock held (--wait ran out; --conflict-exit-code); 4 lease lost while
the command ran; 5 DistributedLock not Ready; 6 Redis unreachable, not
answering or refusing (--unavailable-exit-code); 127 command not found;
otherwise the command's own exit code (128+N when killed by signal N).`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName(os.Args[0])},
	}
	log := &redisLog{w: stderr}
	root.PersistentFlags().CountVarP(&verbosity, "verbose", "v", "verbosity: -v writes every line go-redis logs (default: one line per Redis problem, naming the lock)")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		log.verbose = verbosity > 0
		redis.SetLogger(log)
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exit(ExitUsage, err) })
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCommand(stderr, log), newStatusCommand(stdout, log), newAcquireCommand(stdout, log), newInstallCommand(stdout), newCheckCommand(stdout), newRBACCommand(stdout), newVersionCommand(stdout), newControllerUserCommand(stdout), newAgentCommand(stderr), newSidecarCommand(stdout), newReleaseCommand(stdout), newGetCommand(stdout, stderr, log), newACLFileCommand())
	return root
}

// Main runs lockctl with args and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	code := exitCodeFor(err)
	var ee *exitError
	if err != nil && (!errors.As(err, &ee) || ee.err != nil) {
		// One line: errors joined by the library (a wait's end and its
		// last attempt's error) are separated by newlines.
		printf(stderr, "lockctl: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return code
}

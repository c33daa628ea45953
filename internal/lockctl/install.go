package lockctl

import (
	"io"
	"os"

	"github.com/spf13/cobra"
)

// newInstallCommand copies this binary elsewhere: how an init container
// hands lockctl to a job's container from an image that has no shell or cp.
func newInstallCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "install DEST",
		Short:   "Copy the lockctl binary to DEST (for init containers)",
		Example: `  /lockctl install /tools/lockctl`,
		Args:    usage(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src, err := os.Open(self) //nolint:gosec // G304: the path is os.Executable(), this very binary
			if err != nil {
				return err
			}
			// Read only: closing it cannot lose data.
			defer func() { _ = src.Close() }()
			dst, err := os.OpenFile(args[0], os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755) //nolint:gosec // G302: 0o755, the copy is a program the job's container runs, maybe as another user
			if err != nil {
				return err
			}
			if _, err := io.Copy(dst, src); err != nil {
				_ = dst.Close() // the copy's error is the one to report
				return err
			}
			if err := dst.Close(); err != nil {
				return err
			}
			printf(stdout, "installed lockctl at %s\n", args[0])
			return nil
		},
	}
}

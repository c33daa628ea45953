package lockctl

import (
	"fmt"
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
			src, err := os.Open(self)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := os.OpenFile(args[0], os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
			if err != nil {
				return err
			}
			if _, err := io.Copy(dst, src); err != nil {
				dst.Close()
				return err
			}
			if err := dst.Close(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "installed lockctl at %s\n", args[0])
			return nil
		},
	}
}

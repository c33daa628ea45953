/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/internal/redisacl"
)

// newControllerUserCommand prints the line that creates the controller's
// Redis user, from the code's one list (redisacl.ControllerRules), so
// nobody copies it from a page that may be older than the binary.
func newControllerUserCommand(stdout io.Writer) *cobra.Command {
	var modes redisacl.ControllerModes
	cmd := &cobra.Command{
		Use:   "controller-user [--guard=false] [--isolation=false] [--functions=false] [--cluster]",
		Short: "Print the ACL SETUSER line that creates the controller's Redis user (replace PASSWORD; run it on every node)",
		Args:  usage(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			line, err := redisacl.ControllerSetUser("PASSWORD", modes)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, line)
			return err
		},
	}
	cmd.Flags().BoolVar(&modes.Guard, "guard", true, "allow CONFIG GET and SET: the replica guard and preflight's persistence check (false on a managed service that forbids CONFIG)")
	cmd.Flags().BoolVar(&modes.Isolation, "isolation", true, "allow ACL SETUSER, DELUSER, USERS and COMMAND INFO: tenant users under isolation: ACL (false on a managed service that forbids ACL)")
	cmd.Flags().BoolVar(&modes.Functions, "functions", true, "allow FUNCTION LIST and LOAD: the controller loads the protocol's function library on every master (false on a server older than Redis 7.0, or a managed service that forbids FUNCTION)")
	cmd.Flags().BoolVar(&modes.Cluster, "cluster", false, "allow CLUSTER SHARDS, NODES and KEYSLOT: stores in Cluster mode (Redis 7.0 and later)")
	return cmd
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/internal/redisacl"
)

// newControllerUserCommand prints the line that creates the controller's
// Redis user, from the code's one list (redisacl.ControllerRules), so
// nobody copies it from a page that may be older than the binary.
func newControllerUserCommand(stdout io.Writer) *cobra.Command {
	var (
		modes        redisacl.ControllerModes
		aclfile      bool
		passwordFile string
	)
	cmd := &cobra.Command{
		Use:   "controller-user [--guard=false] [--isolation=false] [--functions=false] [--cluster] [--aclfile --password-file FILE]",
		Short: "Print the ACL SETUSER line that creates the controller's Redis user (replace PASSWORD; run it on every node), or its aclfile line",
		Long: `Print the ACL SETUSER line that creates the controller's Redis user, with
PASSWORD to replace, to run on every node (ACLs do not replicate).

With --aclfile, print the user as a line of a Redis aclfile instead, its
password (read from --password-file, e.g. a mounted Secret) stored as its
SHA-256: a server started with --aclfile FILE has the user after every
restart, which a user made with ACL SETUSER loses unless the server saves
its ACLs to a file.`,
		Example: `  lockctl controller-user
  lockctl controller-user --guard=false --isolation=false     # a managed service without CONFIG and ACL
  lockctl controller-user --aclfile --password-file /secrets/controller-password >> users.acl`,
		Args: usage(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			line, err := controllerUserLine(modes, aclfile, passwordFile)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, line)
			return err
		},
	}
	cmd.Flags().BoolVar(&aclfile, "aclfile", false, "print the user as an aclfile line, with the password of --password-file as its SHA-256")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "with --aclfile: the file holding the controller's password (a trailing newline is dropped)")
	cmd.Flags().BoolVar(&modes.Guard, "guard", true, "allow CONFIG GET and SET: the replica guard and preflight's persistence check (false on a managed service that forbids CONFIG)")
	cmd.Flags().BoolVar(&modes.Isolation, "isolation", true, "allow ACL SETUSER, DELUSER, USERS and COMMAND INFO: tenant users under isolation: ACL (false on a managed service that forbids ACL)")
	cmd.Flags().BoolVar(&modes.Functions, "functions", true, "allow FUNCTION LIST and LOAD: the controller loads the protocol's function library on every master (false on a server older than Redis 7.0, or a managed service that forbids FUNCTION)")
	cmd.Flags().BoolVar(&modes.Cluster, "cluster", false, "allow CLUSTER SHARDS, NODES and KEYSLOT: stores in Cluster mode (Redis 7.0 and later)")
	return cmd
}

// controllerUserLine is the line controller-user prints.
func controllerUserLine(modes redisacl.ControllerModes, aclfile bool, passwordFile string) (string, error) {
	switch {
	case !aclfile && passwordFile != "":
		return "", exit(ExitUsage, errors.New("--password-file goes with --aclfile (the ACL SETUSER line keeps PASSWORD for you to replace, out of shell history)"))
	case !aclfile:
		return redisacl.ControllerSetUser("PASSWORD", modes)
	case passwordFile == "":
		return "", exit(ExitUsage, errors.New("--aclfile needs --password-file"))
	}
	password, err := readPasswordFile("--password-file", passwordFile)
	if err != nil {
		return "", err
	}
	return redisacl.ControllerACLFileLine(password, modes)
}

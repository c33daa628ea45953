/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/redisacl"
)

// aclfilePasswordKey is the Secret key holding the controller's password:
// what a ClusterLockStore's controllerAuth.passwordSecretRef names.
const aclfilePasswordKey = "password"

// newACLFileCommand writes the aclfile of a Redis the cluster runs for
// locks (the chart's quick start): its password is generated in the
// cluster, into a Secret, so that nothing random is rendered (helm
// template, Argo CD) and no password is ever in values or on a command
// line; the server reads the file at every start, so a restart keeps the
// controller's user.
func newACLFileCommand() *cobra.Command {
	var (
		kube   kubeFlags
		secret string
		out    string
	)
	cmd := &cobra.Command{
		Use:   "aclfile --secret NAME --out FILE [-n NS]",
		Short: "Write a Redis aclfile (default user off, the controller's user) from a Secret's password, generated there when it has none",
		Long: `Write a Redis aclfile holding two users: "default", turned off, and the
controller's (as controller-user --aclfile prints it, every mode but
--cluster), its password stored as a SHA-256. The password is the
"password" key of the Secret NAME (in -n's namespace, in a pod its own):
when the Secret has none, a random one (256 bits) is written into it
first, once: concurrent runs end with the same password. The Secret must
exist; lockctl needs get and update on it only.

The chart's quick-start Redis (quickstart.enabled) runs it as an init
container and starts redis-server with --aclfile FILE, and its
ClusterLockStore's controllerAuth reads the same Secret.`,
		Example: `  lockctl aclfile --secret redlease-quickstart-redis --out /acl/users.acl`,
		Args:    usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if secret == "" || out == "" {
				return exit(ExitUsage, errors.New("--secret and --out are required"))
			}
			ns, err := kube.defaultNamespace()
			if err != nil {
				return err
			}
			cfg, err := kube.restConfig()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			password, err := controllerPassword(cmd.Context(), cs, ns, secret)
			if err != nil {
				return err
			}
			return writeACLFile(out, password)
		},
	}
	kube.register(cmd.Flags())
	cmd.Flags().StringVar(&secret, "secret", "", "the Secret whose \"password\" key is the controller's password (generated when absent)")
	cmd.Flags().StringVar(&out, "out", "", "the aclfile to write (mode 0600)")
	return cmd
}

// controllerPassword is the Secret's password, written there first when
// it has none. An update that conflicts (another run wrote first) is
// retried on the Secret as it is now, so every run ends with the password
// that was stored.
func controllerPassword(ctx context.Context, cs kubernetes.Interface, ns, name string) (string, error) {
	for {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
		}
		if pw := string(s.Data[aclfilePasswordKey]); pw != "" {
			return pw, nil
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		pw := redisacl.NewPassword()
		s.Data[aclfilePasswordKey] = []byte(pw)
		_, err = cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{FieldManager: "lockctl-aclfile"})
		switch {
		case apierrors.IsConflict(err):
			continue
		case err != nil:
			return "", fmt.Errorf("writing the generated password into Secret %s/%s: %w", ns, name, err)
		}
		return pw, nil
	}
}

// writeACLFile writes the server's users: default off (no connection
// without a password: tenants get users of their own from the controller)
// and the controller's.
func writeACLFile(path, password string) error {
	line, err := redisacl.ControllerACLFileLine(password, redisacl.ControllerModes{Guard: true, Isolation: true, Functions: true})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte("user default off resetpass -@all\n"+line+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the aclfile: %w", err)
	}
	return nil
}

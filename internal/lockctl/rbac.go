/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
)

// newRBACCommand prints the Role and RoleBinding a pod's ServiceAccount
// needs to take the given locks, the credentials Secrets read from their
// status, or from their spec (podrbac.LockSecretName) before the
// controller ran or with -f from manifests: nobody has to guess the
// controller's Secret names.
func newRBACCommand(stdout io.Writer) *cobra.Command {
	var (
		kube kubeFlags
		sa   string
		file string
	)
	cmd := &cobra.Command{
		Use:   "rbac ([NAMESPACE/]NAME... | -f FILE [NAME...]) --service-account SA [-n NS]",
		Short: "Print the Role and RoleBinding a ServiceAccount needs to take these DistributedLocks (kubectl apply -f -)",
		Long: `Print, as YAML for kubectl apply -f -, the Role a pod needs to take the
given DistributedLocks through pkg/kube or lockctl --lock (get, list and
watch DistributedLocks; get the credentials Secrets their
status.credentialsSecretRef names, and no other Secret), and a RoleBinding
of it to --service-account. The locks must be in one namespace. A lock
not reconciled yet gets the Secret its spec names
(spec.credentialsSecretName, else the name derived from its store), which
the controller will write.

With -f FILE ("-": stdin) the locks are read from manifests, with no API
server: every DistributedLock in the file (other kinds are skipped; a List
is read item by item), or those named. The Role is the one the reconciled
locks would give, so it can be committed beside them (GitOps).`,
		Example: `  lockctl rbac nightly-settlement -n billing --service-account settle | kubectl apply -f -
  lockctl rbac -f billing/locks.yaml --service-account settle > billing/lock-role.yaml`,
		Args: usage(func(cmd *cobra.Command, args []string) error {
			if file != "" {
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sa == "" {
				return exit(ExitUsage, errors.New("--service-account is required: the ServiceAccount of the pods that take the locks"))
			}
			if file != "" {
				ns, secrets, err := rbacFromFile(file, kube.namespace(), args, cmd.InOrStdin())
				if err != nil {
					return err
				}
				return printRBAC(stdout, ns, sa, secrets)
			}
			ns, names, err := lockNames(&kube, args)
			if err != nil {
				return err
			}
			cfg, err := kube.restConfig()
			if err != nil {
				return err
			}
			scheme := runtime.NewScheme()
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return fmt.Errorf("connecting to the API server: %w", err)
			}
			var secrets []string
			for _, name := range names {
				var dl v1alpha1.DistributedLock
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dl); err != nil {
					return fmt.Errorf("DistributedLock %s/%s: %w", ns, name, err)
				}
				name := podrbac.LockSecretName(&dl)
				if ref := dl.Status.CredentialsSecretRef; ref != nil {
					name = ref.Name
				}
				if !slices.Contains(secrets, name) {
					secrets = append(secrets, name)
				}
			}
			return printRBAC(stdout, ns, sa, secrets)
		},
	}
	kube.register(cmd.Flags())
	cmd.Flags().StringVar(&sa, "service-account", "", "the ServiceAccount of the pods that take the locks (in the locks' namespace)")
	cmd.Flags().StringVarP(&file, "filename", "f", "", `read the DistributedLocks from this manifest file ("-": stdin) instead of the API server`)
	return cmd
}

// lockNames resolves [NAMESPACE/]NAME arguments to one namespace.
func lockNames(kube *kubeFlags, args []string) (string, []string, error) {
	var (
		ns    string
		names []string
	)
	for _, a := range args {
		t := targetFlags{lock: a, kube: *kube}
		n, name, err := t.lockName()
		if err != nil {
			return "", nil, err
		}
		if ns != "" && n != ns {
			return "", nil, exit(ExitUsage, fmt.Errorf("%s and %s/%s are in different namespaces: a Role is in one", a, ns, names[0]))
		}
		ns, names = n, append(names, name)
	}
	return ns, names, nil
}

// printRBAC writes the Role and its RoleBinding, named after the
// ServiceAccount, as two YAML documents.
func printRBAC(w io.Writer, ns, sa string, secrets []string) error {
	name := sa + "-redlease-locks"
	meta := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/component": "lock-user"}}
	role := rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta, Rules: podrbac.Rules(secrets...)}
	binding := rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	for i, obj := range []any{role, binding} {
		out, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			printf(w, "---\n")
		}
		printf(w, "%s", out)
	}
	return nil
}

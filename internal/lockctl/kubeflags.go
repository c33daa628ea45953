/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are kubectl's connection flags: --kubeconfig, --context,
// -n/--namespace, --as, --as-group, --as-uid, --token, --server,
// --request-timeout, --cluster, --user, the TLS flags, loaded as kubectl
// loads them: --kubeconfig, else $KUBECONFIG (a list of files, merged),
// else ~/.kube/config, else the in-cluster configuration; the namespace
// from -n, else the context's, else the pod's own when in-cluster, else
// "default".
//
// The flags are client-go's clientcmd set, which k8s.io/cli-runtime's
// genericclioptions.ConfigFlags binds for kubectl: the same names, help
// and meaning. ConfigFlags itself is not used because its package pulls
// in kustomize, and with it Go's plugin package, which turns off the
// linker's dead-code elimination of methods: lockctl (also the sidecar
// and agent image) went from 48 to 113 MB. kubectl's --username and
// --password (basic auth, which Kubernetes no longer serves) are left
// out: `lockctl release --password` is Redis's.
type kubeFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// readTimeout, set before register, is the default --request-timeout
	// of the commands that only read (status, get): they give up by
	// themselves, where kubectl's default is to wait (0).
	readTimeout time.Duration
}

// register adds all the flags; registerConnection all but -n, for the
// commands that name no namespaced object by its name alone.
func (k *kubeFlags) register(fs *pflag.FlagSet) { k.add(fs, true) }

func (k *kubeFlags) registerConnection(fs *pflag.FlagSet) { k.add(fs, false) }

func (k *kubeFlags) add(fs *pflag.FlagSet, namespace bool) {
	fs.StringVar(&k.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config).")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.AuthOverrideFlags.Username, names.AuthOverrideFlags.Password = clientcmd.FlagInfo{}, clientcmd.FlagInfo{}
	names.ContextOverrideFlags.Namespace.Description = "namespace of the lock when it is named without one (default: the context's namespace, in a pod its own)"
	if !namespace {
		names.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	}
	names.CurrentContext.Description = "the kubeconfig context to use (default: its current-context)"
	if k.readTimeout > 0 {
		names.Timeout.Default = k.readTimeout.String()
		names.Timeout.Description = "how long to wait for the API server and Redis, the whole command, before giving up (kubectl's flag: a duration, or a number of seconds; 0: no limit)"
	}
	clientcmd.BindOverrideFlags(&k.overrides, fs, names)
}

// namespace is -n's value ("" when not given).
func (k *kubeFlags) namespace() string { return k.overrides.Context.Namespace }

// explicit reports whether a kubeconfig or a context was asked for: then
// it must load.
func (k *kubeFlags) explicit() bool { return k.kubeconfig != "" || k.overrides.CurrentContext != "" }

// requestTimeout is --request-timeout (0: none), read as kubectl reads it:
// a number of seconds, or a duration.
func (k *kubeFlags) requestTimeout() (time.Duration, error) {
	if k.overrides.Timeout == "" {
		return 0, nil
	}
	d, err := clientcmd.ParseTimeout(k.overrides.Timeout)
	if err != nil {
		return 0, exit(ExitUsage, fmt.Errorf("--request-timeout %q: %w", k.overrides.Timeout, err))
	}
	return d, nil
}

// clientConfig is the kubeconfig as the flags select and override it.
func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &k.overrides)
}

// restConfig is the API server's address and credentials.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// defaultNamespace is the namespace of a lock named without one.
func (k *kubeFlags) defaultNamespace() (string, error) {
	ns, _, err := k.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return ns, nil
}

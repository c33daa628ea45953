/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are kubectl's --kubeconfig, --context and -n/--namespace,
// loaded as kubectl loads them: --kubeconfig, else $KUBECONFIG (a list of
// files, merged), else ~/.kube/config, else the in-cluster configuration;
// the namespace from -n, else the context's, else the pod's own when
// in-cluster, else "default".
type kubeFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

// register adds all three flags; registerConnection all but -n, for the
// commands that name no namespaced object by its name alone.
func (k *kubeFlags) register(fs *pflag.FlagSet) {
	k.registerConnection(fs)
	fs.StringVarP(&k.namespace, "namespace", "n", "", "namespace of the lock when it is named without one (default: the context's namespace, in a pod its own)")
}

func (k *kubeFlags) registerConnection(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use (default: its current-context)")
}

func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.context}
	overrides.Context.Namespace = k.namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
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

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package demo

import (
	"context"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// podLocker is the pkg/kube Locker of the demo's pod commands (worker,
// leader, intrude) for DistributedLock namespace/lockName: from kubeconfig,
// or, when it is empty, the in-cluster config (in a pod: its service
// account), as clientcmd falls back.
func podLocker(ctx context.Context, kubeconfig, namespace, lockName string, opts ...lock.Option) (*kube.Locker, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kube.NewLocker(ctx, cfg, namespace, lockName, opts...)
}

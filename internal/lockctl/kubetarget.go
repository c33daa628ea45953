/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// openKube opens the DistributedLock namespace/name through pkg/kube: the
// same path as a pod's, the lock's status and the one Secret it names.
func openKube(ctx context.Context, cfg *rest.Config, namespace, name string, opts []lock.Option) (*locker, error) {
	l, err := kube.NewLocker(ctx, cfg, namespace, name, opts...)
	if err != nil {
		return nil, err
	}
	inspect := func(ctx context.Context) (inspection, error) {
		if n := l.Resource().Spec.PermitsOrDefault(); n > 1 {
			return inspectSemaphore(n, l.InspectPermits)(ctx)
		}
		return inspectLock(l.Inspect)(ctx)
	}
	return &locker{handle: l, inspect: inspect, describe: func() description { return describeLock(l.Resource()) }, Close: l.Close}, nil
}

// describeLock reports where a DistributedLock lives, as its status
// publishes it, its store, its Ready condition and the holder the
// controller saw.
func describeLock(dl *v1alpha1.DistributedLock) description {
	d := description{store: "inline", ready: "Unknown", holder: dl.Status.Holder}
	if ref := dl.Spec.StoreRef; ref != nil {
		d.store = string(ref.Kind) + "/" + ref.Name
	}
	if c := dl.Status.Connection; c != nil {
		d.mode, d.addresses = string(c.Mode), c.Addresses
		if c.Sentinel != nil {
			d.masterName, d.addresses = c.Sentinel.MasterName, c.Sentinel.Addresses
		}
	}
	for _, c := range dl.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			d.ready = string(c.Status)
			if c.Status != "True" {
				d.ready += " (" + c.Reason + ": " + c.Message + ")"
			}
		}
	}
	return d
}

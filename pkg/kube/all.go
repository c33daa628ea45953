/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"fmt"

	"github.com/redlease/redlease/pkg/lock"
)

// TryAcquireAll takes the keys of several DistributedLocks all or none, in
// one atomic step (see lock.Locker.TryAcquireAll): a job that moves money
// between two accounts declares a DistributedLock per account and takes
// both. The resources must be Ready, locks (spec.permits 1, not
// semaphores), in one namespace, and resolve to one store with the same
// lease settings (ttl, renewal, maxHold, fairness, fencing, replica acks,
// failover quarantine): one connection takes every key. Otherwise it
// fails with lock.ErrInvalidConfig, naming the resource that differs;
// on Redis Cluster the keys must share a hash slot (lock.ErrKeysAcrossSlots).
// Like Locker.TryAcquire it makes one attempt.
func TryAcquireAll(ctx context.Context, lockers ...*Locker) (*lock.MultiLease, error) {
	return takeAll(ctx, false, lockers)
}

// AcquireAll waits until it holds the keys of every one of lockers at once
// (see lock.Locker.AcquireAll: a place in every key's line with one
// arrival, no deadlock, not overtaken by later waiters), bounded by ctx,
// with TryAcquireAll's limits. Like Locker.Acquire it also waits for a
// resource that is not Ready yet.
func AcquireAll(ctx context.Context, lockers ...*Locker) (*lock.MultiLease, error) {
	return takeAll(ctx, true, lockers)
}

// takeAll binds every one of lockers (waiting for them to be Ready with
// wait) and takes their keys in one call on the first one's Locker.
func takeAll(ctx context.Context, wait bool, lockers []*Locker) (*lock.MultiLease, error) {
	if len(lockers) == 0 {
		return nil, fmt.Errorf("kube: taking several locks, but no DistributedLock was given: %w", lock.ErrInvalidConfig)
	}
	bindings := make([]*binding, 0, len(lockers))
	unref := func() {
		for i, b := range bindings {
			lockers[i].unref(b)
		}
	}
	keys := make([]string, len(lockers))
	for i, l := range lockers {
		b, err := l.bind(ctx, wait)
		if err != nil {
			unref()
			return nil, err
		}
		bindings = append(bindings, b)
		keys[i] = b.key
		if err := sameStore(lockers[0], bindings[0], l, b); err != nil {
			unref()
			return nil, err
		}
	}
	take := bindings[0].locker.TryAcquireAll
	if wait {
		take = bindings[0].locker.AcquireAll
	}
	m, err := take(ctx, keys...)
	if err != nil {
		unref()
		return nil, err
	}
	go func() { // the bindings stay open while the leases live
		<-m.Done()
		unref()
	}()
	return m, nil
}

// sameStore checks that b (of l) can be taken with first (of f) in one
// call: a lock, not a semaphore, of f's namespace and store.
func sameStore(f *Locker, first *binding, l *Locker, b *binding) error {
	name := l.namespace + "/" + l.name
	switch {
	case b.permits > 1:
		return fmt.Errorf("kube: %s has spec.permits %d, a semaphore, which cannot be taken with other locks: %w", name, b.permits, lock.ErrInvalidConfig)
	case l.namespace != f.namespace:
		return fmt.Errorf("kube: %s is in another namespace than %s/%s (another tenant's credentials): %w", name, f.namespace, f.name, lock.ErrInvalidConfig)
	case b.store != first.store:
		return fmt.Errorf("kube: %s (%s) is not in the store of %s/%s (%s) with the same lease settings: one script on one server takes the keys: %w",
			name, b.desc, f.namespace, f.name, first.desc, lock.ErrInvalidConfig)
	}
	return nil
}

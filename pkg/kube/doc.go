// Package kube gives a pod locks declared by DistributedLock resources.
//
//	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement")
//	lease, err := l.Acquire(ctx)
//	defer lease.Release(context.Background())
//
// NewLocker reads the resource (spec: key, TTL, renew interval, fencing,
// waitForReplicas; status: what the controller resolved) and the Secret it
// references, and returns a handle bound to the resource's key. The handle
// watches the resource until closed: when the controller publishes a new
// master (Replicated) or Cluster masters, or settings change (TTL,
// credentials), the next acquisition uses them, while leases already held
// stay on their connections until they end. Sentinel mode uses a go-redis
// failover client on the sentinels, which follows failovers on its own.
// Redlock nodes come from spec.redis.addresses only, never from status, so
// every pod counts the same majority.
//
// The lock's identity (effective key, mode, db, addresses, Service,
// Sentinel master name) is immutable in the API. When it changes anyway
// (the resource deleted and re-created under the same name) while this
// handle holds leases under the old one, new acquisitions wait for those
// leases to end (Acquire) or fail with ErrRebinding (TryAcquire): a lease on
// the new key beside one on the old would be two holders of one lock.
//
// A resource that is not Ready (Ready condition not True: its safety
// properties are not all in force) gives ErrNotReady at once, never a hang.
//
// The pod's ServiceAccount needs get, list and watch on distributedlocks in
// its namespace and get on the referenced Secret; see docs/library.md ("Pods: pkg/kube").
package kube

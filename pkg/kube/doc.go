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
// master (Replicated) or Cluster masters, or the spec changes, the next
// acquisition uses them, while leases already held stay on their
// connections until they end. Sentinel mode uses a go-redis
// failover client on the sentinels, which follows failovers on its own.
// Redlock nodes come from spec.redis.addresses only, never from status, so
// every pod counts the same majority.
//
// A resource that is not Ready (Ready condition not True: its safety
// properties are not all in force) gives ErrNotReady at once, never a hang.
//
// The pod's ServiceAccount needs get, list and watch on distributedlocks in
// its namespace and get on the referenced Secret; see README "Pods".
package kube

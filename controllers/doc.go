// Package controllers holds the DistributedLock reconciler.
//
// One reconcile observes a lock's Redis and writes what it saw to the
// resource's status, once, only when something changed:
//
//   - credentials.go: the Secrets the resource references (servers,
//     sentinels, CA), read through a metadata-only cache;
//   - resolve.go: addresses, a Service's ready EndpointSlice endpoints,
//     Sentinel's master and replicas, a Cluster's shards;
//   - probe.go: PING and INFO on every endpoint, concurrently, with short
//     timeouts, and replica discovery;
//   - guard.go: the replica guard (min-replicas-to-write/-max-lag) applied,
//     verified and repaired on masters, with the stricter value winning when
//     locks disagree;
//   - preflight.go: eviction policy and persistence;
//   - redlock.go: node independence and the quorum;
//   - holder.go: the holder's identity (never the lock value: TestHolder), its fence,
//     and the fence floor;
//   - status.go: conditions and endpoint status;
//   - events.go: Events on transitions;
//   - watches.go: Services, EndpointSlices and Secrets mapped back to the
//     locks that reference them through field indexes;
//   - metrics.go: redlease_controller_* metrics.
//
// The controller never acquires, releases or deletes a lock (it runs none of
// the lock scripts); deleting a DistributedLock leaves Redis alone
// (TestDeletion: the key, its holder and its fence counter stay).
package controllers

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kube gives a pod locks declared by DistributedLock resources.
//
//	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement")
//	lease, err := l.Acquire(ctx)
//	defer lease.Release(context.Background())
//
// A pod reads only its DistributedLock and the one Secret its status
// names, never a store or the Secrets the spec references. NewLocker reads
// the resource: from its status the effective key (status.key), where to
// connect (status.connection: mode, addresses, Sentinel, db, TLS server
// name) and the credentials Secret (status.credentialsSecretRef: username,
// password, ca.crt, and when used sentinel-username, sentinel-password,
// tls.crt and tls.key); from its spec the lease settings (TTL, renew
// interval, fencing, waitForReplicas). The handle watches the resource
// until closed: when the controller publishes a new master (Standalone,
// Replicated) or changes settings (TTL, TLS), the next acquisition uses
// them, while leases already held stay on their connections until they
// end. Sentinel mode uses a go-redis failover client on the sentinels,
// which follows failovers on its own. Redlock nodes are the addresses in
// status.connection, which the controller copies from the spec.
//
// Passwords reach Redis through go-redis's credentials provider: every
// new connection, of any binding, uses the password of the Secret as last
// read. The Secret is parsed once per resourceVersion and read again when
// the copy is older than the lock's TTL (at least 1s, at most 30s), on
// the next acquisition or new connection. A rotation therefore needs no
// new binding and never moves a held lease. Not guaranteed: connections
// opened with an old (or leaked) password stay authenticated until they
// close, since Redis checks a password only at AUTH; a new connection
// made with a copy read before the rotation fails if the old password was
// dropped sooner than the copy's age (the controller waits 2 × TTL); the
// sentinels' credentials and TLS material are read when a binding is
// built, so a change to them makes a new binding for new acquisitions only.
//
// The lock's identity (spec.storeRef, status.key, mode, db, the Redlock
// nodes, the Cluster seeds, the Sentinel master name) is immutable in the
// API. When
// it changes anyway (the resource deleted and re-created under the same
// name) while this handle holds leases under the old one, new acquisitions
// wait for those leases to end (Acquire) or fail with ErrRebinding
// (TryAcquire): a lease on the new key beside one on the old would be two
// holders of one lock.
//
// A resource that is not Ready (Ready condition not True: its safety
// properties are not all in force), or whose status lacks the key, the
// connection or the credentials Secret, gives TryAcquire ErrNotReady at
// once; Acquire waits for it to become Ready within its context (a lock
// applied together with the workload that takes it), and fails with
// ErrNotReady, naming the reason, when the context ends first
// (TestNotReadyIsWaitedForWithinBounds). Acquire without a deadline waits
// until the lock is Ready.
//
// The pod's ServiceAccount needs get, list and watch on distributedlocks in
// its namespace and get on the Secret status.credentialsSecretRef names;
// see docs/library.md ("Pods: pkg/kube").
package kube

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
// names, never a store or the Secrets the spec references (the tests run as
// a ServiceAccount holding only that Role: TestLockerUsesTheStatusAndItsSecret).
// NewLocker reads
// the resource: from its status the effective key (status.key), where to
// connect (status.connection: mode, addresses, Sentinel, db, TLS server
// name) and the credentials Secret (status.credentialsSecretRef: username,
// password, ca.crt, and when used sentinel-username, sentinel-password,
// tls.crt and tls.key); from its spec the lease settings (TTL, renew
// interval, maxHold, fencing, waitForReplicas). The handle watches the
// resource until closed: when the controller publishes a new master (Standalone,
// Replicated) or changes settings (TTL, TLS), the next acquisition uses
// them, while leases already held stay on their connections until they
// end. Sentinel mode uses a go-redis failover client on the sentinels,
// which follows failovers on its own. Redlock nodes are the addresses in
// status.connection, which the controller copies from the spec.
//
// The Lockers of a process share what they read. Lockers made with equal
// rest.Configs (same server, user, impersonation, TLS settings and token
// file: a config made per goroutine by rest.InClusterConfig counts as one; a
// config with a transport wrapper, dialer, proxy function or exec plugin
// shares only with itself) share one API client; those of one namespace on
// it share one watch of the namespace's DistributedLocks (one list+watch,
// client-go's reflector), started by the first NewLocker and stopped by the
// last Close; those whose locks name the same credentials Secret share its
// copy. 50 handles on 5 locks of a namespace make one watch, no GET of a
// lock and no discovery request, and read their Secret once per TTL however
// often they acquire (TestLockersShareOneWatchAndOneSecretCopy). Redis
// connections are not shared: each Locker has its own clients. The price of
// one watch per namespace: it brings every DistributedLock of the namespace,
// not only those with handles, and keeps a copy of each (without
// managedFields). A Locker made while its namespace is watched starts from
// the watch's copy, which can be a moment behind the API server: a
// TryAcquire right after the lock became Ready may still see it not Ready
// (Acquire waits).
//
// Passwords reach Redis through go-redis's credentials provider: every
// new connection, of any binding, uses the password of the Secret as last
// read. The Secret is parsed once per resourceVersion and read again when
// the copy is older than the lock's TTL (at least 1s, at most 30s), on
// the next acquisition or new connection. A rotation therefore needs no
// new binding and never moves a held lease
// (TestPasswordRotationKeepsHeldLeases). Not guaranteed: connections
// opened with an old (or leaked) password stay authenticated until they
// close, since Redis checks a password only at AUTH; a new connection
// made with a copy read before the rotation fails if the old password was
// dropped sooner than the copy's age (the controller waits 2 × TTL); the
// sentinels' credentials and TLS material are read when a binding is
// built, so a change to them makes a new binding for new acquisitions only.
//
// The lock's identity (spec.storeRef, status.key, mode, db, the Redlock
// nodes, the Cluster seeds, the Sentinel master name) is immutable in the
// API. When it changes anyway (the resource deleted and re-created under the
// same name) while this handle holds leases under the old one, new
// acquisitions wait for those leases to end (Acquire) or fail with
// ErrRebinding (TryAcquire): a lease on the new key beside one on the old
// would be two holders of one lock.
//
// A resource that is not Ready (Ready condition not True: its safety
// properties are not all in force), whose status lacks the key, the
// connection or the credentials Secret, or that was deleted, gives
// TryAcquire ErrNotReady at once; Acquire waits for it to become Ready
// (or to be created again) within its context (a lock applied together
// with the workload that takes it), and fails with ErrNotReady, naming
// the reason, when the context ends first
// (TestNotReadyIsWaitedForWithinBounds). Acquire without a deadline waits
// until the lock is Ready. Leases held when the resource is deleted run on
// until they end: the deletion leaves Redis alone.
//
// The API server is not needed to take a lock that was Ready when last seen.
// While it is unreachable (down, restarting, not answering), acquisitions
// use the resource as last seen and the Secret's copy: the copy is read
// again at most once per its age, and that read gets at most 2s and half of
// what is left of the acquisition's context before the copy serves; a new
// Locker on a lock the process already watches is made without it. When it
// is back the watch resumes (client-go's reflector retries with a backoff of
// at most 30s plus jitter: within a minute) and what changed meanwhile,
// deletions included, applies to the next acquisition (TestAPIServerBlip).
// Not guaranteed while it is away, because nothing can be seen then: a
// change made meanwhile applies late — a new master published after a
// failover (acquisitions go on to the master last seen, where only Redis, as
// a read-only replica or through the replica guard, can refuse them), a
// deletion, the lock becoming not Ready, new settings; a password rotated
// meanwhile is not read, so new Redis connections fail once the controller
// drops the old password (2 × TTL after the rotation) while open ones go on;
// the first Locker of a namespace, and one on a lock the watch has not
// shown, need the API server (NewLocker fails with its answer, or its
// context).
//
// The pod's ServiceAccount needs get, list and watch on distributedlocks in
// its namespace and get on the Secret status.credentialsSecretRef names;
// see docs/library.md ("Pods: pkg/kube").
package kube

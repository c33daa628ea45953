/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

// Condition types of a DistributedLock (status.conditions[].type).
//
// This file is the one place that lists condition types and reasons; the
// troubleshooting table in docs/operator.md lists the same reasons.
const (
	// ConditionReady is True only when every safety property the resource
	// asks for is in force: the Secrets it references readable, the servers a
	// lease needs resolved and reachable (Standalone, Replicated, Sentinel:
	// the master; Cluster: every master), the replica guard applied (when
	// requested), a majority of independent nodes reachable (Redlock). Its
	// reason is Available when True, else the reason of the first condition
	// that holds it back. An unreachable replica or Sentinel, or one Redlock
	// node of five, makes EndpointsResolved False but not Ready.
	ConditionReady = "Ready"

	// ConditionEndpointsResolved is True when the controller found the Redis
	// endpoints (addresses, Service EndpointSlices, Sentinel master and
	// replicas, Cluster masters) and could talk to them.
	ConditionEndpointsResolved = "EndpointsResolved"

	// ConditionReplicationGuarded (Replicated, Sentinel, Cluster) is True when
	// the requested safety.minReplicasToWrite/minReplicasMaxLag are in force
	// on every master and enough replicas are connected for the requested
	// waitForReplicas.
	ConditionReplicationGuarded = "ReplicationGuarded"

	// ConditionQuorumAvailable (Redlock) is True when a majority of
	// independent nodes is reachable.
	ConditionQuorumAvailable = "QuorumAvailable"

	// ConditionPreflight is True when no server setting endangers the locks
	// (eviction policy, persistence). A False Preflight is a warning: it does
	// not by itself make Ready False.
	ConditionPreflight = "Preflight"

	// ConditionTenantsProvisioned (ClusterLockStore, LockStore) is True when
	// every namespace with locks on the store has its credentials Secret
	// (and, under isolation ACL, its Redis ACL user on every node).
	ConditionTenantsProvisioned = "TenantsProvisioned"

	// ConditionFunctionsLoaded (LockStore, ClusterLockStore) is True when
	// every master of the store serves the protocol's Redis Functions
	// library (status.endpoints[].libraries), which the controller loads
	// where it is missing. It does not hold back Ready: pods run the same
	// Lua as scripts where the library is missing, unless the store's
	// tenants.scripts is FunctionsOnly (then they wait for it).
	ConditionFunctionsLoaded = "FunctionsLoaded"

	// ConditionStoreReady (DistributedLock on a store) mirrors the store's
	// Ready condition as the lock sees it: found, allowed for the lock's
	// namespace, Ready, and the credentials Secret provisioned.
	ConditionStoreReady = "StoreReady"

	// ConditionFailoverQuarantine (a DistributedLock with
	// spec.safety.failoverQuarantine) is True when the quarantine's bound
	// holds and the key's epoch record is in place (reason EpochRecorded,
	// or Quarantined while a quarantine holds grants back), False when
	// the bound does not hold (QuarantineUnsound, which holds back Ready),
	// Unknown when the record could not be read or written
	// (EpochUnrecorded, which does not: the pods' scripts check and write
	// the record themselves).
	ConditionFailoverQuarantine = "FailoverQuarantine"
)

// Condition reasons (status.conditions[].reason), stable CamelCase words.
// Some are also the reasons of Events.
const (
	// ReasonAvailable (Ready True): every safety property the resource asks
	// for is in force.
	ReasonAvailable = "Available"

	// ReasonReconciling (Unknown): the controller has not finished its first
	// observation of this generation.
	ReasonReconciling = "Reconciling"

	// ReasonEndpointsResolved (EndpointsResolved True): every endpoint was
	// found and answered.
	ReasonEndpointsResolved = "Resolved"

	// ReasonEndpointsUnresolved: no endpoint could be found: the Service or
	// its EndpointSlices are missing or have no ready endpoint, the
	// sentinels do not know the master, or no Cluster seed answered.
	ReasonEndpointsUnresolved = "EndpointsUnresolved"

	// ReasonEndpointUnreachable: an endpoint did not answer (connection
	// refused, timeout, TLS failure); status.endpoints[].lastError says why.
	ReasonEndpointUnreachable = "EndpointUnreachable"

	// ReasonAuthFailed: a server refused the credentials of
	// spec.redis.passwordSecretRef (or the sentinels' credentials).
	ReasonAuthFailed = "AuthFailed"

	// ReasonSecretUnavailable: a Secret the resource references (password,
	// CA bundle) or the key in it does not exist in the resource's namespace.
	ReasonSecretUnavailable = "SecretUnavailable"

	// ReasonMasterUnknown (Replicated, Sentinel): no reachable endpoint is a
	// master, or more than one claims to be.
	ReasonMasterUnknown = "MasterUnknown"

	// ReasonGuardApplied (ReplicationGuarded True): the requested replica
	// guard is in force on every master. Also a Normal Event each time the
	// controller changes a master's settings (first apply, drift repaired).
	ReasonGuardApplied = "GuardApplied"

	// ReasonNotRequested: the resource does not ask for what this condition
	// reports (no safety.minReplicasToWrite or waitForReplicas for
	// ReplicationGuarded); the condition does not hold back Ready.
	ReasonNotRequested = "NotRequested"

	// ReasonGuardMissing (ReplicationGuarded False): a master's
	// min-replicas-to-write/min-replicas-max-lag are weaker than requested
	// and manageReplicaSettings is false, so the controller may not fix them.
	ReasonGuardMissing = "GuardMissing"

	// ReasonReplicasInsufficient (ReplicationGuarded False): a master has
	// fewer connected, in-lag replicas than minReplicasToWrite or
	// waitForReplicas need; writes (and so acquires) will fail.
	ReasonReplicasInsufficient = "ReplicasInsufficient"

	// ReasonConfigUnavailable (ReplicationGuarded False, Preflight
	// Unknown): CONFIG GET/SET is disabled, renamed or denied by ACL (as
	// managed services do), so the settings cannot be read or applied; the
	// message says what to do instead.
	ReasonConfigUnavailable = "ConfigUnavailable"

	// ReasonSettingsConflict (ReplicationGuarded, and a Warning Event):
	// requesters (stores, inline locks) that reach one master with the same
	// credentials ask it for different replica settings; among them the
	// stricter values apply (the larger min-replicas-to-write, the smaller
	// min-replicas-max-lag), and a store's settings win over inline locks'.
	// Requesters are counted, never named: they may be other namespaces'.
	ReasonSettingsConflict = "SettingsConflict"

	// ReasonQuorumReached (QuorumAvailable True): a majority of independent
	// Redlock nodes is reachable.
	ReasonQuorumReached = "QuorumReached"

	// ReasonQuorumUnavailable (QuorumAvailable False): fewer than a majority
	// of the Redlock nodes are reachable; no lease can be acquired.
	ReasonQuorumUnavailable = "QuorumUnavailable"

	// ReasonNodesNotIndependent (QuorumAvailable False): two Redlock nodes
	// are one server (same run_id) or one replicates another, so a majority
	// can be lost at once.
	ReasonNodesNotIndependent = "NodesNotIndependent"

	// ReasonPreflightPassed (Preflight True): no server setting endangers
	// the locks.
	ReasonPreflightPassed = "PreflightPassed"

	// ReasonEvictionPolicyUnsafe (Preflight False): maxmemory-policy is not
	// noeviction, so Redis can evict lock keys and fence counters under
	// memory pressure.
	ReasonEvictionPolicyUnsafe = "EvictionPolicyUnsafe"

	// ReasonPersistenceDisabled (Preflight True, a warning in its message):
	// neither RDB nor AOF is on, so a restart forgets the locks and fencing
	// tokens then rely on the server clock floor alone. Preflight stays True
	// because fencing is designed for this; an unsafe eviction policy takes
	// precedence (Preflight False, EvictionPolicyUnsafe).
	ReasonPersistenceDisabled = "PersistenceDisabled"

	// ReasonFenceFloorRaised (Event, and the Ready message of the reconcile
	// that did it): the fence counter in Redis was below
	// status.fenceHighWater (a clock went back or a failover lost
	// increments) and the controller raised it to fenceHighWater, so the
	// next acquisition gets a fence above every fence seen.
	ReasonFenceFloorRaised = "FenceFloorRaised"

	// ReasonMasterChanged (Event): status.master moved to another server
	// (a failover, or a promotion).
	ReasonMasterChanged = "MasterChanged"

	// ReasonDeleted (Event): the DistributedLock was deleted. Redis is left
	// alone: live leases run to their TTL, the fence counter stays (a
	// re-created lock keeps increasing fences), replica settings stay.
	ReasonDeleted = "Deleted"

	// ReasonInvalidSpec (Ready False): the API server holds the resource
	// but the controller cannot use it: a key the lock library refuses, or
	// an object stored before a CRD rule it breaks was added (Redlock
	// through a Service, a renewInterval too long for its ttl). Only a spec change helps, or for immutable fields
	// deleting and re-creating the lock.
	ReasonInvalidSpec = "InvalidSpec"

	// ReasonStoreNotFound (Ready False): spec.storeRef names a LockStore
	// (in the lock's namespace) or ClusterLockStore that does not exist.
	ReasonStoreNotFound = "StoreNotFound"

	// ReasonStoreNotReady (Ready False): the store exists but is not Ready;
	// the message carries the store's reason.
	ReasonStoreNotReady = "StoreNotReady"

	// ReasonStoreReady (StoreReady True): the store is Ready and the lock's
	// namespace may use it.
	ReasonStoreReady = "StoreReady"

	// ReasonNamespaceNotAllowed (Ready False): the ClusterLockStore's
	// tenants.namespaceSelector does not select the lock's namespace
	// (absent selector: no namespace may use the store).
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"

	// ReasonCredentialsNotProvisioned (Ready False): the store has not (yet)
	// written the credentials Secret of the lock's namespace.
	ReasonCredentialsNotProvisioned = "CredentialsNotProvisioned"

	// ReasonCredentialsSecretConflict (Ready False, and a Warning Event):
	// a Secret of the name the lock's pods read (spec.credentialsSecretName
	// or the derived one) exists and was not written by the controller for
	// the lock's store (or inline lock): someone else's, or another
	// store's. It is never overwritten.
	ReasonCredentialsSecretConflict = "CredentialsSecretConflict"

	// ReasonTenantsProvisioned (TenantsProvisioned True): every tenant
	// namespace has its credentials (and ACL user).
	ReasonTenantsProvisioned = "TenantsProvisioned"

	// ReasonAddressNotAllowed (EndpointsResolved or Ready False): an
	// address the store or lock names, or one learned from Sentinel or
	// Cluster, is outside the manager's --allowed-redis-cidrs.
	ReasonAddressNotAllowed = "AddressNotAllowed"

	// ReasonTooManyEndpoints (Ready False): the store or lock names or
	// discovers (a master's replicas, Sentinel, CLUSTER SHARDS, a
	// Service's endpoints) more endpoints than the controller probes for
	// one object; the message names the count.
	ReasonTooManyEndpoints = "TooManyEndpoints"

	// ReasonACLUnavailable (TenantsProvisioned False): a node refused ACL
	// SETUSER/DELUSER with the controller's credentials (no ACL rights, or
	// a server older than 6.0), so tenants cannot be isolated.
	ReasonACLUnavailable = "ACLUnavailable"

	// ReasonLibraryLoaded (FunctionsLoaded True): every master serves the
	// library. Also a Normal Event each time the controller loads it on a
	// master that lacked it (a restart without persistence, a failover to
	// a server without it, a new server or protocol version).
	ReasonLibraryLoaded = "LibraryLoaded"

	// ReasonFunctionsUnavailable (FunctionsLoaded False, and a Warning
	// Event): a master does not serve the library. Either the server has no
	// functions (older than Redis 7.0) or refuses FUNCTION to the
	// controller's credentials (a managed service, an ACL without
	// +function|list +function|load): then the store keeps scripts, and
	// under tenants.scripts FunctionsOnly its tenants keep EVAL and EVALSHA
	// until it does (upgrade the server, or grant controllerAuth FUNCTION
	// LIST and LOAD). Or loading failed for a passing reason (READONLY
	// during a failover, a timeout): the next probe loads it again, and
	// FunctionsOnly tenants wait until then.
	ReasonFunctionsUnavailable = "FunctionsUnavailable"

	// ReasonMemoryNearLimit (Preflight False): a server's used_memory is
	// at or above 90 % of its maxmemory. With noeviction, writes (and so
	// acquisitions and renewals) fail with OOM once it is reached; ACLs
	// cannot bound one tenant's share of it. Raise maxmemory, or find the
	// keys that fill it.
	ReasonMemoryNearLimit = "MemoryNearLimit"

	// ReasonInlineLocksDisabled (Ready False): the manager runs with
	// --allow-inline-locks=false; the lock must use a store (storeRef).
	ReasonInlineLocksDisabled = "InlineLocksDisabled"

	// ReasonEpochRecorded (FailoverQuarantine True): the quarantine's
	// bound holds and the key's epoch record names the server that takes
	// its writes; nothing is held back.
	ReasonEpochRecorded = "EpochRecorded"

	// ReasonQuarantined (FailoverQuarantine True, and a Warning Event when
	// it starts): the key's server changed (a failover, a restart that may
	// have lost writes, or its epoch record was lost) and nothing is
	// granted until status.quarantinedUntil, when every lease the old
	// server granted has ended. Waiters keep their places.
	ReasonQuarantined = "Quarantined"

	// ReasonQuarantineUnsound (FailoverQuarantine and Ready False, and a
	// Warning Event): the quarantine's bound does not hold: the master has
	// more replicas than min-replicas-to-write requires (a partitioned old
	// master keeping the others goes on granting after one is promoted),
	// the replica guard is not managed, or the store is Redlock. Raise
	// minReplicasToWrite to the number of replicas (on a store: the
	// store's), or turn the quarantine off.
	ReasonQuarantineUnsound = "QuarantineUnsound"

	// ReasonEpochUnrecorded (FailoverQuarantine Unknown): the key's epoch
	// record could not be read or written (the message says why). It does
	// not hold back Ready: the pods' scripts check and write the record on
	// every acquisition, and the first one waits a quarantine when the
	// controller never wrote it.
	ReasonEpochUnrecorded = "EpochUnrecorded"
)

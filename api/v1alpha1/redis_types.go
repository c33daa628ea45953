/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// This file holds the Redis topology and connection types that
// DistributedLock (inline form), LockStore and ClusterLockStore share, and
// the endpoint status the controller reports for them.

// RedisMode is the Redis topology a DistributedLock runs on.
// +kubebuilder:validation:Enum=Standalone;Replicated;Sentinel;Cluster;Redlock
type RedisMode string

const (
	// RedisModeStandalone is one Redis server without replicas.
	RedisModeStandalone RedisMode = "Standalone"
	// RedisModeReplicated is one master with replicas, without Sentinel; the
	// controller finds the master among the addresses (INFO replication) and
	// publishes it in status.master.
	RedisModeReplicated RedisMode = "Replicated"
	// RedisModeSentinel is a master with replicas watched by Redis Sentinel;
	// the servers are found through spec.redis.sentinel.
	RedisModeSentinel RedisMode = "Sentinel"
	// RedisModeCluster is a Redis Cluster; addresses are seed nodes.
	RedisModeCluster RedisMode = "Cluster"
	// RedisModeRedlock is the Redlock algorithm on an odd number (3, 5,
	// 7...) of independent Redis servers; a lease needs a majority of them.
	RedisModeRedlock RedisMode = "Redlock"
)

// RedisSpec says where the Redis servers of a lock or store are and how to
// connect.
//
// Its identity (mode, db, addresses, service, sentinel.masterName) is
// immutable: changing it while leases are held would give holders on the
// old servers and holders on the new ones at once. The transition rules sit
// on the whole object so that adding or removing an optional field counts
// as a change too; an absent db equals its default 0. Moving a lock or a
// store means deleting and re-creating it.
//
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode",fieldPath=".mode",messageExpression="'mode is immutable (' + oldSelf.mode + ' to ' + self.mode + '): delete and re-create the lock or store to move it'"
// +kubebuilder:validation:XValidation:rule="(has(self.db) ? self.db : 0) == (has(oldSelf.db) ? oldSelf.db : 0)",fieldPath=".db",messageExpression=`'db is immutable (%d to %d; absent is 0): delete and re-create the lock or store to move it'.format([has(oldSelf.db) ? oldSelf.db : 0, has(self.db) ? self.db : 0])`,message="db is immutable (absent is 0): delete and re-create the lock or store to move it"
// +kubebuilder:validation:XValidation:rule="has(self.addresses) == has(oldSelf.addresses) && (!has(self.addresses) || self.addresses == oldSelf.addresses)",fieldPath=".addresses",message="addresses is immutable: delete and re-create the lock or store to move it (the servers, and for Redlock the quorum, are part of its identity)"
// +kubebuilder:validation:XValidation:rule="has(self.service) == has(oldSelf.service) && (!has(self.service) || self.service == oldSelf.service)",fieldPath=".service",messageExpression=`has(self.service) && has(oldSelf.service) ? 'service is immutable (%s%s:%d to %s%s:%d): delete and re-create the lock or store to move it'.format([has(oldSelf.service.__namespace__) ? oldSelf.service.__namespace__ + '/' : "", oldSelf.service.name, oldSelf.service.port, has(self.service.__namespace__) ? self.service.__namespace__ + '/' : "", self.service.name, self.service.port]) : 'service is immutable (adding or removing it counts): delete and re-create the lock or store to move it'`,message="service is immutable: delete and re-create the lock or store to move it"
// +kubebuilder:validation:XValidation:rule="has(self.sentinel) == has(oldSelf.sentinel) && (!has(self.sentinel) || self.sentinel.masterName == oldSelf.sentinel.masterName)",fieldPath=".sentinel.masterName",messageExpression=`'sentinel.masterName is immutable' + (has(self.sentinel) && has(oldSelf.sentinel) ? ' (' + oldSelf.sentinel.masterName + ' to ' + self.sentinel.masterName + ')' : "") + ': delete and re-create the lock or store to move it'`
// +kubebuilder:validation:XValidation:rule="!(has(self.addresses) && has(self.service))",message="set either addresses or service, not both"
// +kubebuilder:validation:XValidation:rule="self.mode in ['Sentinel', 'Redlock'] || has(self.addresses) || has(self.service)",reason="FieldValueRequired",message="set addresses or service to say where the Redis servers are"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Sentinel' || (!has(self.addresses) && !has(self.service))",reason="FieldValueForbidden",message="in Sentinel mode the servers are found through the sentinels: set sentinel.addresses, not addresses or service"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Sentinel' || has(self.sentinel)",fieldPath=".sentinel",reason="FieldValueRequired",message="Sentinel mode needs sentinel.masterName and sentinel.addresses"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Sentinel' || !has(self.sentinel)",fieldPath=".sentinel",reason="FieldValueForbidden",messageExpression=`'is only used in Sentinel mode (mode is ' + self.mode + ')'`,message="is only used in Sentinel mode"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Standalone' || !has(self.addresses) || size(self.addresses) == 1",fieldPath=".addresses",messageExpression=`'Standalone mode takes exactly one address, not %d (for a master with replicas use Replicated mode)'.format([size(self.addresses)])`,message="Standalone mode takes exactly one address (for a master with replicas use Replicated mode)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Replicated' || !has(self.addresses) || size(self.addresses) >= 1",fieldPath=".addresses",message="Replicated mode needs at least one address (the master and its replicas)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Cluster' || !has(self.addresses) || size(self.addresses) >= 1",fieldPath=".addresses",message="Cluster mode needs at least one seed address (any node of the cluster)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || !has(self.addresses) || (size(self.addresses) >= 3 && size(self.addresses) % 2 == 1)",fieldPath=".addresses",messageExpression=`'Redlock needs an odd number (3, 5, 7...) of independent nodes, not %d'.format([size(self.addresses)])`,message="Redlock needs an odd number (3, 5, 7...) of independent nodes"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || !has(self.service)",fieldPath=".service",reason="FieldValueForbidden",message="Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names): a Service's endpoints change with pod IPs, so membership and quorum would change too"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || has(self.service) || has(self.addresses)",fieldPath=".addresses",reason="FieldValueRequired",message="Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names), one per independent node; the quorum is len/2+1"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Cluster' || !has(self.db) || self.db == 0",fieldPath=".db",messageExpression=`'Redis Cluster has only database 0, not %d'.format([self.db])`,message="Redis Cluster has only database 0"
// +kubebuilder:validation:XValidation:rule="!has(self.username) || has(self.passwordSecretRef)",fieldPath=".passwordSecretRef",reason="FieldValueRequired",message="username needs passwordSecretRef: Redis AUTH takes a username with a password"
type RedisSpec struct {
	// mode is the Redis topology. Where the servers are, by mode:
	//   - Standalone: exactly one address, or a service (one ready endpoint).
	//   - Replicated: addresses of the master and its replicas, or a service.
	//   - Sentinel: sentinel only (addresses and service must not be set).
	//   - Cluster: one or more seed addresses, or a service.
	//   - Redlock: an odd number (3, 5, 7...) of addresses, one per
	//     independent node, that stay the same for the lock's life (e.g.
	//     StatefulSet DNS names); never a service, whose endpoints change
	//     with pod IPs. The quorum is len(addresses)/2+1.
	// Immutable.
	// +required
	Mode RedisMode `json:"mode"`

	// addresses are host:port of the Redis servers (see mode for what each
	// mode expects). Exclusive with service. Immutable (order aside).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=3
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule=`self.matches(r'^([^\s/:\[\]]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535`,message="must be host:port, e.g. redis-0.redis:6379, 10.0.0.7:6379 or [fd00::7]:6379"
	Addresses []string `json:"addresses,omitempty"`

	// service names a Service in this resource's namespace; the controller
	// resolves its ready endpoints through EndpointSlices. Exclusive with
	// addresses. Not for Redlock, whose nodes must be explicit addresses.
	// Immutable; the endpoints behind it may change.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// sentinel locates the master through Redis Sentinel. Sentinel mode only.
	// +optional
	Sentinel *SentinelSpec `json:"sentinel,omitempty"`

	// username is the Redis ACL user (AUTH username password) that pods
	// use, and the controller unless the lock names controllerAuth. Absent
	// ⇒ the default user. Needs passwordSecretRef. Inline locks only: a
	// store names clientAuth and controllerAuth instead.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	Username string `json:"username,omitempty"`

	// passwordSecretRef selects the Redis password of username in a Secret
	// of the lock's namespace. Absent ⇒ no AUTH. Inline locks only.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// tls configures TLS to the Redis servers (and sentinels). Absent ⇒ plain TCP.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// db is the Redis logical database, 0 to 15 (Cluster: 0 only).
	// Absent ⇒ 0. Immutable (absent and 0 are the same).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	DB int32 `json:"db,omitempty"`
}

// ServiceReference names a Service: in the resource's own namespace, or
// for a ClusterLockStore (which has none) in the namespace it names.
type ServiceReference struct {
	// namespace of the Service. ClusterLockStore only, and required there;
	// namespaced resources use their own namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name: lower-case letters, digits and '-'"
	Namespace string `json:"namespace,omitempty"`

	// name of the Service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="must be a Service name: lower-case letters, digits and '-', starting with a letter"
	Name string `json:"name"`

	// port is the Service port that serves Redis; the controller maps it to
	// each endpoint's target port.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// SentinelSpec locates a master through Redis Sentinel.
type SentinelSpec struct {
	// masterName is the name the sentinels monitor the master under
	// (sentinel monitor <masterName> ...). Immutable; the sentinels'
	// addresses may change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	MasterName string `json:"masterName"`

	// addresses are host:port of the sentinels (usually 3 or more).
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=3
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule=`self.matches(r'^([^\s/:\[\]]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535`,message="must be host:port, e.g. redis-sentinel:26379 or 10.0.0.9:26379"
	Addresses []string `json:"addresses"`

	// username is the ACL user the sentinels require, if any. Needs
	// passwordSecretRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	Username string `json:"username,omitempty"`

	// passwordSecretRef selects the sentinels' own password (requirepass of
	// the sentinels) in a Secret of this namespace. Absent ⇒ the sentinels
	// need no AUTH. The servers' password is spec.redis.passwordSecretRef.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
}

// SecretKeyRef selects one key of a Secret: in the resource's own
// namespace, or for a ClusterLockStore in the namespace it names.
type SecretKeyRef struct {
	// namespace of the Secret. ClusterLockStore only, and required there;
	// namespaced resources read Secrets of their own namespace only.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name: lower-case letters, digits and '-'"
	Namespace string `json:"namespace,omitempty"`

	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a Secret name: lower-case letters, digits, '-' and '.'"
	Name string `json:"name"`

	// key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="must be a Secret data key: letters, digits, '-', '_' and '.'"
	Key string `json:"key"`
}

// SecretReference names a whole Secret: in the resource's own namespace, or
// for a ClusterLockStore in the namespace it names.
type SecretReference struct {
	// namespace of the Secret. ClusterLockStore only, and required there.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name: lower-case letters, digits and '-'"
	Namespace string `json:"namespace,omitempty"`

	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a Secret name: lower-case letters, digits, '-' and '.'"
	Name string `json:"name"`
}

// RedisAuth is a Redis AUTH user and password.
//
// +kubebuilder:validation:XValidation:rule="!has(self.username) || has(self.passwordSecretRef)",fieldPath=".passwordSecretRef",reason="FieldValueRequired",message="username needs passwordSecretRef: Redis AUTH takes a username with a password"
type RedisAuth struct {
	// username is the Redis ACL user. Absent ⇒ the default user.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	Username string `json:"username,omitempty"`

	// passwordSecretRef selects the password. Absent ⇒ no AUTH.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
}

// TLSSpec configures TLS to Redis.
//
// +kubebuilder:validation:XValidation:rule="(has(self.enabled) && self.enabled) || (!has(self.caSecretRef) && !has(self.clientCertSecretRef) && !has(self.serverName) && !(has(self.insecureSkipVerify) && self.insecureSkipVerify))",message="caSecretRef, clientCertSecretRef, serverName and insecureSkipVerify need enabled: true"
// +kubebuilder:validation:XValidation:rule="!(has(self.insecureSkipVerify) && self.insecureSkipVerify && has(self.caSecretRef))",fieldPath=".insecureSkipVerify",reason="FieldValueForbidden",message="skips certificate verification, so caSecretRef would be ignored: set one or the other"
type TLSSpec struct {
	// enabled turns TLS on. Absent ⇒ false.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// caSecretRef selects a PEM bundle of CA certificates that sign the
	// servers' certificates, in a Secret of this namespace.
	// Absent ⇒ the system roots.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`

	// clientCertSecretRef names a kubernetes.io/tls Secret (tls.crt,
	// tls.key) whose certificate the clients present (mutual TLS). The
	// controller uses it, and copies it into the credentials Secret pods
	// read. Absent ⇒ no client certificate.
	// +optional
	ClientCertSecretRef *SecretReference `json:"clientCertSecretRef,omitempty"`

	// serverName is the name checked against the servers' certificates.
	// Absent ⇒ the host of each address.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServerName string `json:"serverName,omitempty"`

	// insecureSkipVerify accepts any server certificate. For tests only:
	// anyone on the path can then impersonate the servers.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// SafetySpec asks for replication guards: protection against a failover
// that promotes a replica which never received the lock key.
//
// +kubebuilder:validation:XValidation:rule="!has(self.manageReplicaSettings) || !self.manageReplicaSettings || (has(self.minReplicasToWrite) && self.minReplicasToWrite >= 1)",fieldPath=".minReplicasToWrite",reason="FieldValueRequired",message="manageReplicaSettings needs minReplicasToWrite of 1 or more: it is the value the controller applies to the master(s)"
type SafetySpec struct {
	// minReplicasToWrite is the number of connected replicas, lagging at
	// most minReplicasMaxLag, a master needs to accept writes (Redis
	// min-replicas-to-write). The controller applies it when
	// manageReplicaSettings is true and otherwise only checks it;
	// ReplicationGuarded says whether it is in force. Absent or 0 ⇒ no guard.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinReplicasToWrite int32 `json:"minReplicasToWrite,omitempty"`

	// minReplicasMaxLag is the largest replication lag, in whole seconds,
	// of a replica counted for minReplicasToWrite (Redis
	// min-replicas-max-lag). Between 1s and 1h.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')",message="must be a duration such as 10s or 1m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || int(duration(self)) % 1000000000 == 0",message="must be a whole number of seconds, e.g. 10s (Redis's min-replicas-max-lag takes seconds)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="must be between 1s and 1h"
	MinReplicasMaxLag *metav1.Duration `json:"minReplicasMaxLag,omitempty"`

	// manageReplicaSettings lets the controller set min-replicas-to-write
	// and min-replicas-max-lag on the master(s) with CONFIG SET, and repair
	// drift. These settings are server-wide: when two locks ask one master
	// for different values the stricter applies and both report
	// SettingsConflict. Deleting the lock leaves them in place.
	// Absent ⇒ false: the controller only checks the servers' settings.
	// +optional
	ManageReplicaSettings bool `json:"manageReplicaSettings,omitempty"`

	// waitForReplicas is the number of replicas that must acknowledge the
	// acquire and every renewal (Redis WAIT) before they count; fewer ⇒ an
	// acquire is released and fails, and a renewal does not extend the
	// lease. Absent or 0 ⇒ no wait.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	WaitForReplicas int32 `json:"waitForReplicas,omitempty"`

	// failoverQuarantine (DistributedLock only) makes the lock's scripts
	// grant nothing, after its key's server changed (a replica promoted
	// by an asynchronous failover, a restart that may have lost writes),
	// until every lease the old server granted has ended: the longest
	// TTL granted on the key, plus how long a master cut off from its
	// replicas may still accept writes (status.failoverQuarantine.cutoff),
	// plus 2 % for clock drift. The controller writes the key's epoch
	// record before first use, so a record lost later starts a
	// quarantine too. Sound only where a cut-off master stops writing:
	// Standalone, or Replicated, Sentinel and Cluster with the replica
	// guard managed and minReplicasToWrite equal to the number of
	// replicas (on a store: the store's guard); FailoverQuarantine says
	// whether it holds. Locks and semaphores alike; not with Redlock.
	// Absent ⇒ false.
	// +optional
	FailoverQuarantine bool `json:"failoverQuarantine,omitempty"`
}

// FencingSpec configures fencing tokens.
type FencingSpec struct {
	// enabled makes every acquire return a fencing token greater than all
	// earlier ones for this key. Absent ⇒ true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// EndpointRole is what a probed Redis endpoint is.
// +kubebuilder:validation:Enum=Master;Replica;Sentinel;Unknown
type EndpointRole string

const (
	// EndpointRoleMaster is a server that accepts writes (every Redlock node is one).
	EndpointRoleMaster EndpointRole = "Master"
	// EndpointRoleReplica is a server replicating a master.
	EndpointRoleReplica EndpointRole = "Replica"
	// EndpointRoleSentinel is a Redis Sentinel.
	EndpointRoleSentinel EndpointRole = "Sentinel"
	// EndpointRoleUnknown is an endpoint whose role could not be read
	// (unreachable, or refused INFO).
	EndpointRoleUnknown EndpointRole = "Unknown"
)

// EndpointStatus is what the controller observed of one Redis endpoint.
type EndpointStatus struct {
	// address is the host:port probed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Address string `json:"address"`

	// role of the endpoint.
	// +optional
	Role EndpointRole `json:"role,omitempty"`

	// reachable is true when the last probe got an answer.
	// +required
	Reachable bool `json:"reachable"`

	// version is the server's redis_version: the Redis version it is
	// compatible with (Valkey 8 reports 7.2.4).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// server is what the server says it is and its own version, e.g.
	// "redis 7.0.15" or "valkey 8.0.1" (INFO server_name and
	// <server_name>_version).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Server string `json:"server,omitempty"`

	// runID is the server's run_id (Redlock independence is checked on it).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RunID string `json:"runID,omitempty"`

	// connectedReplicas is the number of replicas connected to a master.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConnectedReplicas *int32 `json:"connectedReplicas,omitempty"`

	// slots are the hash slots a Cluster master serves, as ranges
	// ("0-5460,10923"); pods and locks find a key's master with them.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Slots string `json:"slots,omitempty"`

	// libraries are the redlease Redis Functions libraries a master of a
	// store serves (FUNCTION LIST), e.g. [redlease_v7]; two during a
	// rolling upgrade of the protocol. Empty on a master without them (see
	// the store's FunctionsLoaded condition) and on replicas.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=64
	Libraries []string `json:"libraries,omitempty"`

	// lastError is the last probe error, empty when the probe succeeded.
	// It carries Redis error replies and network error classes only, never
	// bytes a non-Redis peer sent.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastError string `json:"lastError,omitempty"`
}

// LocalSecretReference names a Secret in the resource's own namespace.
type LocalSecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConnectionStatus is what a pod needs to connect to a lock's Redis,
// published in the lock's status so that pods never read stores.
type ConnectionStatus struct {
	// mode is the Redis topology.
	// +required
	Mode RedisMode `json:"mode"`

	// addresses are host:port to connect to: the master (Standalone,
	// Replicated), the seeds (Cluster) or the nodes (Redlock). Empty in
	// Sentinel mode.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	Addresses []string `json:"addresses,omitempty"`

	// sentinel locates the master in Sentinel mode.
	// +optional
	Sentinel *SentinelConnection `json:"sentinel,omitempty"`

	// db is the logical database.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	DB int32 `json:"db,omitempty"`

	// tls is set when the servers speak TLS.
	// +optional
	TLS *ConnectionTLS `json:"tls,omitempty"`
}

// SentinelConnection locates a master through Sentinel.
type SentinelConnection struct {
	// masterName the sentinels monitor the master under.
	// +required
	// +kubebuilder:validation:MaxLength=253
	MasterName string `json:"masterName"`

	// addresses of the sentinels.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	Addresses []string `json:"addresses"`
}

// ConnectionTLS is how pods check the servers' certificates; the CA bundle
// is ca.crt of the credentials Secret (absent ⇒ the system roots).
type ConnectionTLS struct {
	// serverName is checked against the servers' certificates. Absent ⇒
	// the host of each address.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServerName string `json:"serverName,omitempty"`

	// insecureSkipVerify accepts any server certificate (tests only).
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Validation notes for the markers below.
//
// Durations are metav1.Duration: strings that Go's time.ParseDuration reads.
// Every CEL rule that calls duration() first checks the string against the
// pattern ^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$ and the rule is
// written so that a malformed string makes it false (with its readable
// message) instead of failing to evaluate. The API server runs all CEL rules
// even when another rule already failed, so each rule guards itself.
//
// Every string and list has a MaxLength/MaxItems so the API server's CEL cost
// estimate stays bounded.

// DefaultTTL is the schema default of spec.ttl ("30s"); code that reads a
// DistributedLock which has not been through the API server (a unit test, a
// file) can use it when spec.ttl is nil.
const DefaultTTL = 30 * time.Second

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

// DistributedLockSpec defines the desired state of DistributedLock.
//
// The lock's identity (key, redis.mode, redis.db, redis.addresses,
// redis.service, redis.sentinel.masterName) is immutable: changing it while
// leases are held would give holders on the old key or servers and holders
// on the new ones at once. The transition rules sit at spec level so that
// adding or removing an optional field counts as a change too; an absent db
// equals its default 0. Moving a lock means deleting and re-creating it.
//
// +kubebuilder:validation:XValidation:rule="has(self.key) == has(oldSelf.key) && (!has(self.key) || self.key == oldSelf.key)",fieldPath=".key",message="key is immutable: delete and re-create the lock to move it (holders of the old key would not exclude holders of the new one)"
// +kubebuilder:validation:XValidation:rule="self.redis.mode == oldSelf.redis.mode",fieldPath=".redis.mode",messageExpression="'redis.mode is immutable (' + oldSelf.redis.mode + ' to ' + self.redis.mode + '): delete and re-create the lock to move it'"
// +kubebuilder:validation:XValidation:rule="(has(self.redis.db) ? self.redis.db : 0) == (has(oldSelf.redis.db) ? oldSelf.redis.db : 0)",fieldPath=".redis.db",message="redis.db is immutable (absent is 0): delete and re-create the lock to move it"
// +kubebuilder:validation:XValidation:rule="has(self.redis.addresses) == has(oldSelf.redis.addresses) && (!has(self.redis.addresses) || self.redis.addresses == oldSelf.redis.addresses)",fieldPath=".redis.addresses",message="redis.addresses is immutable: delete and re-create the lock to move it (the servers, and for Redlock the quorum, are part of the lock's identity)"
// +kubebuilder:validation:XValidation:rule="has(self.redis.service) == has(oldSelf.redis.service) && (!has(self.redis.service) || self.redis.service == oldSelf.redis.service)",fieldPath=".redis.service",message="redis.service is immutable: delete and re-create the lock to move it"
// +kubebuilder:validation:XValidation:rule="has(self.redis.sentinel) == has(oldSelf.redis.sentinel) && (!has(self.redis.sentinel) || self.redis.sentinel.masterName == oldSelf.redis.sentinel.masterName)",fieldPath=".redis.sentinel.masterName",message="redis.sentinel.masterName is immutable: delete and re-create the lock to move it"
// +kubebuilder:validation:XValidation:rule="!has(self.renewInterval) || !self.renewInterval.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || (has(self.ttl) && (!self.ttl.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || duration(self.ttl) > duration('24h'))) || (duration(self.renewInterval) <= duration('24h') && 200 * int(duration(self.renewInterval)) <= 99 * int(duration(has(self.ttl) ? self.ttl : '30s')) - 200000000)",fieldPath=".renewInterval",message="must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms (e.g. ttl 30s allows up to 14.849s)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.minReplicasToWrite) || self.safety.minReplicasToWrite == 0 || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.minReplicasToWrite",reason="FieldValueForbidden",message="replica guards need replicas: use them with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.waitForReplicas) || self.safety.waitForReplicas == 0 || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.waitForReplicas",reason="FieldValueForbidden",message="waiting for replicas needs replicas: use it with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
type DistributedLockSpec struct {
	// key is the Redis key of the lock. The fence counter is {key}:fence and
	// the event channel {key}:events, so that all three hash to one Redis
	// Cluster slot. Absent ⇒ "<namespace>/<name>" of this resource.
	// No whitespace or control characters, no '{' or '}', at most 512 bytes.
	// Immutable (setting or removing it too).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	// +kubebuilder:validation:XValidation:rule="!self.contains('{') && !self.contains('}')",message="must not contain '{' or '}': the lock's keys <key>, {<key>}:fence and {<key>}:events must hash to the same Redis Cluster slot"
	// +kubebuilder:validation:XValidation:rule="size(bytes(self)) <= 512",message="must be at most 512 bytes long (UTF-8)"
	Key string `json:"key,omitempty"`

	// ttl is the lease length: a holder that stops renewing loses the lock
	// this long after its last renewal. Between 100ms and 24h.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')",message="must be a duration such as 30s, 1500ms or 1m30s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || (duration(self) >= duration('100ms') && duration(self) <= duration('24h'))",message="must be between 100ms and 24h"
	TTL *metav1.Duration `json:"ttl,omitempty"`

	// renewInterval is the watchdog's renewal period. Absent ⇒ ttl/3.
	// At least 10ms, and 2 × renewInterval ≤ 0.99 × ttl − 2ms (see
	// MaxRenewInterval): a renewal that fails once can be retried before
	// the lease's local validity (ttl minus the library's default clock
	// drift allowance, 1% + 2ms) runs out.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')",message="must be a duration such as 10s, 500ms or 1m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || duration(self) >= duration('10ms')",message="must be at least 10ms"
	RenewInterval *metav1.Duration `json:"renewInterval,omitempty"`

	// redis says where the lock lives and how to connect.
	// +required
	Redis RedisSpec `json:"redis"`

	// safety asks for replication guards (Replicated, Sentinel and Cluster
	// modes only). Absent ⇒ none.
	// +optional
	Safety *SafetySpec `json:"safety,omitempty"`

	// fencing configures fencing tokens. Absent ⇒ enabled.
	// +optional
	// +kubebuilder:default={enabled: true}
	Fencing *FencingSpec `json:"fencing,omitempty"`
}

// RedisSpec says where the Redis servers of a lock are and how to connect.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.addresses) && has(self.service))",message="set either addresses or service, not both"
// +kubebuilder:validation:XValidation:rule="self.mode in ['Sentinel', 'Redlock'] || has(self.addresses) || has(self.service)",reason="FieldValueRequired",message="set addresses or service to say where the Redis servers are"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Sentinel' || (!has(self.addresses) && !has(self.service))",reason="FieldValueForbidden",message="in Sentinel mode the servers are found through the sentinels: set sentinel.addresses, not addresses or service"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Sentinel' || has(self.sentinel)",fieldPath=".sentinel",reason="FieldValueRequired",message="Sentinel mode needs sentinel.masterName and sentinel.addresses"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Sentinel' || !has(self.sentinel)",fieldPath=".sentinel",reason="FieldValueForbidden",message="is only used in Sentinel mode"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Standalone' || !has(self.addresses) || size(self.addresses) == 1",fieldPath=".addresses",message="Standalone mode takes exactly one address (for a master with replicas use Replicated mode)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Replicated' || !has(self.addresses) || size(self.addresses) >= 1",fieldPath=".addresses",message="Replicated mode needs at least one address (the master and its replicas)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Cluster' || !has(self.addresses) || size(self.addresses) >= 1",fieldPath=".addresses",message="Cluster mode needs at least one seed address (any node of the cluster)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || !has(self.addresses) || (size(self.addresses) >= 3 && size(self.addresses) % 2 == 1)",fieldPath=".addresses",message="Redlock needs an odd number (3, 5, 7...) of independent nodes"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || !has(self.service)",fieldPath=".service",reason="FieldValueForbidden",message="Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names): a Service's endpoints change with pod IPs, so membership and quorum would change too"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Redlock' || has(self.service) || has(self.addresses)",fieldPath=".addresses",reason="FieldValueRequired",message="Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names), one per independent node; the quorum is len/2+1"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Cluster' || !has(self.db) || self.db == 0",fieldPath=".db",message="Redis Cluster has only database 0"
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

	// username is the Redis ACL user (AUTH username password). Absent ⇒ the
	// default user. Needs passwordSecretRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\pZ\p{Cc}]')`,message="must not contain whitespace or control characters"
	Username string `json:"username,omitempty"`

	// passwordSecretRef selects the Redis password in a Secret of this
	// resource's namespace. The controller connects with these credentials
	// only. Absent ⇒ no AUTH.
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

// ServiceReference names a Service in the DistributedLock's namespace.
type ServiceReference struct {
	// name of the Service (same namespace as the DistributedLock).
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

// SecretKeyRef selects one key of a Secret in the DistributedLock's namespace.
type SecretKeyRef struct {
	// name of the Secret (same namespace as the DistributedLock).
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

// TLSSpec configures TLS to Redis.
//
// +kubebuilder:validation:XValidation:rule="(has(self.enabled) && self.enabled) || (!has(self.caSecretRef) && !has(self.serverName) && !(has(self.insecureSkipVerify) && self.insecureSkipVerify))",message="caSecretRef, serverName and insecureSkipVerify need enabled: true"
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

	// version is the server's redis_version.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// runID is the server's run_id (Redlock independence is checked on it).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RunID string `json:"runID,omitempty"`

	// connectedReplicas is the number of replicas connected to a master.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConnectedReplicas *int32 `json:"connectedReplicas,omitempty"`

	// lastError is the last probe error, empty when the probe succeeded.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastError string `json:"lastError,omitempty"`
}

// LockHolder is the current holder as observed by the controller. It never
// contains the lock value (the ownership proof).
type LockHolder struct {
	// identity is the holder's identity, the part of the lock value before
	// the last '/'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Identity string `json:"identity"`

	// fence is the holder's fencing token (the fence counter when the
	// holder was first seen); absent when fencing is disabled.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Fence int64 `json:"fence,omitempty"`

	// since is when the controller first saw this holder.
	// +required
	Since metav1.Time `json:"since"`
}

// DistributedLockStatus defines the observed state of DistributedLock.
// Only the controller writes it.
type DistributedLockStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, EndpointsResolved, ReplicationGuarded
	// (Replicated, Sentinel, Cluster), QuorumAvailable (Redlock) and
	// Preflight. See conditions.go for the reasons.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// master is the host:port of the server that takes this lock's writes:
	// the server (Standalone), the current master (Replicated, Sentinel), or
	// the master serving the key's hash slot (Cluster). Empty for Redlock.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Master string `json:"master,omitempty"`

	// quorum is the number of nodes a Redlock lease needs: a majority,
	// len(spec.redis.addresses)/2+1, however many of them answer.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Quorum int32 `json:"quorum,omitempty"`

	// endpoints are the Redis endpoints the controller probed.
	// +optional
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=128
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`

	// holder is the current holder; absent when the lock is free.
	// +optional
	Holder *LockHolder `json:"holder,omitempty"`

	// fenceHighWater is the highest fencing token the controller has seen
	// for this key. When the counter in Redis is found below it (clock went
	// back, a failover lost increments), the controller raises the counter
	// above it (reason FenceFloorRaised).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FenceHighWater int64 `json:"fenceHighWater,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dlock,categories=redlease
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.redis.mode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Holder",type=string,JSONPath=`.status.holder.identity`
// +kubebuilder:printcolumn:name="Fence",type=integer,JSONPath=`.status.holder.fence`
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=`.spec.ttl`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DistributedLock is a lock on Redis that workloads acquire with the
// redlease library or lockctl; the controller checks and reports the
// safety of the Redis servers behind it.
type DistributedLock struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of DistributedLock.
	// +required
	Spec DistributedLockSpec `json:"spec"`

	// status defines the observed state of DistributedLock.
	// +optional
	Status DistributedLockStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// DistributedLockList contains a list of DistributedLock.
type DistributedLockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []DistributedLock `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &DistributedLock{}, &DistributedLockList{})
		return nil
	})
}

// MaxRenewInterval is the longest spec.renewInterval the API accepts for a
// lease of ttl: 2 × renewInterval ≤ 0.99 × ttl − 2ms, the CEL rule on
// DistributedLockSpec in Go. The lock library counts a lease valid for
// ttl − drift (drift = 1% of ttl + 2ms by default) and needs two renewal
// periods inside that. 0 when ttl leaves no room (below ~2ms). ttl must be
// within the API's bounds (at most 24h; beyond ~1000 days it overflows).
func MaxRenewInterval(ttl time.Duration) time.Duration {
	// Scaled by 100, like the CEL rule, so that the bound is exact:
	// (99 × ttl − 100 × 2ms) / 200.
	room := 99*ttl - 100*2*time.Millisecond
	if room <= 0 {
		return 0
	}
	return room / 200
}

// TTLOrDefault returns spec.ttl, or DefaultTTL when it is unset (an object
// that has not been through the API server).
func (s *DistributedLockSpec) TTLOrDefault() time.Duration {
	if s.TTL == nil {
		return DefaultTTL
	}
	return s.TTL.Duration
}

// FencingEnabled reports whether fencing tokens are on: true unless
// spec.fencing.enabled is explicitly false.
func (s *DistributedLockSpec) FencingEnabled() bool {
	return s.Fencing == nil || s.Fencing.Enabled == nil || *s.Fencing.Enabled
}

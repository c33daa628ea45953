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
//
// messageExpression is used where the refused value is not already in the
// error: the API server quotes a refused string or number field itself
// (`spec.ttl: Invalid value: "50ms": ...`), but for a rule on an object it
// prints no value. Those rules that compare fields or count items say what
// they found, and keep message as the fallback. Numbers and durations reach
// the text through format() ('... %d ...'.format([n])): concatenating
// string(n) makes the cost estimate unbounded and the CRD is refused.
// Keys are strings.quote()d (a control character would break the line,
// and a message with a line break is dropped for the fallback). A field
// named like a CEL keyword is read as __namespace__ where its value is
// used. The longest renewInterval the ttl allows is computed as
// MaxRenewInterval does (TestRenewIntervalMessageAgreesWithGo), once: CEL
// in Kubernetes has no let-binding, so the renewInterval message binds
// each value it reuses with a one-element list's map() — l the limit in
// ns, u the unit it is printed in (ms below 1s or when not whole ms, else
// s), f the fraction in thousandths of u.

// DefaultTTL is the schema default of spec.ttl ("30s"); code that reads a
// DistributedLock which has not been through the API server (a unit test, a
// file) can use it when spec.ttl is nil.
const DefaultTTL = 30 * time.Second

// DistributedLockSpec defines the desired state of DistributedLock.
//
// A lock lives either on a store (storeRef: a LockStore of its namespace or
// a ClusterLockStore the platform team shares) or on Redis servers it names
// itself (redis, the inline form: an anonymous store of its own). Exactly
// one of the two is set.
//
// The lock's identity (key, storeRef, and the topology identity of an
// inline redis block, see RedisSpec) is immutable: changing it while leases
// are held would give holders on the old key or servers and holders on the
// new ones at once. The transition rules sit at spec level so that adding
// or removing an optional field counts as a change too. Moving a lock means
// deleting and re-creating it.
//
// +kubebuilder:validation:XValidation:rule="has(self.storeRef) != has(self.redis)",message="set exactly one of storeRef (a LockStore or ClusterLockStore that holds the Redis settings) or redis (the servers, inline)"
// +kubebuilder:validation:XValidation:rule="has(self.storeRef) == has(oldSelf.storeRef) && (!has(self.storeRef) || (self.storeRef.kind == oldSelf.storeRef.kind && self.storeRef.name == oldSelf.storeRef.name))",fieldPath=".storeRef",messageExpression="'storeRef is immutable' + (has(self.storeRef) && has(oldSelf.storeRef) ? ' (' + oldSelf.storeRef.kind + '/' + oldSelf.storeRef.name + ' to ' + self.storeRef.kind + '/' + self.storeRef.name + ')' : ' (switching between storeRef and redis counts)') + ': delete and re-create the lock to move it'"
// +kubebuilder:validation:XValidation:rule="!has(self.controllerAuth) || has(self.redis)",fieldPath=".controllerAuth",reason="FieldValueForbidden",message="is for inline locks only: a store names its own controllerAuth"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || !has(self.redis.passwordSecretRef) || !has(self.redis.passwordSecretRef.namespace)",fieldPath=".redis.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a DistributedLock reads Secrets of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.controllerAuth) || !has(self.controllerAuth.passwordSecretRef) || !has(self.controllerAuth.passwordSecretRef.namespace)",fieldPath=".controllerAuth.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a DistributedLock reads Secrets of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || !has(self.redis.sentinel) || !has(self.redis.sentinel.passwordSecretRef) || !has(self.redis.sentinel.passwordSecretRef.namespace)",fieldPath=".redis.sentinel.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a DistributedLock reads Secrets of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || !has(self.redis.tls) || !has(self.redis.tls.caSecretRef) || !has(self.redis.tls.caSecretRef.namespace)",fieldPath=".redis.tls.caSecretRef.namespace",reason="FieldValueForbidden",message="a DistributedLock reads Secrets of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || !has(self.redis.tls) || !has(self.redis.tls.clientCertSecretRef) || !has(self.redis.tls.clientCertSecretRef.namespace)",fieldPath=".redis.tls.clientCertSecretRef.namespace",reason="FieldValueForbidden",message="a DistributedLock reads Secrets of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || !has(self.redis.service) || !has(self.redis.service.namespace)",fieldPath=".redis.service.namespace",reason="FieldValueForbidden",message="a DistributedLock uses Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="has(self.key) == has(oldSelf.key) && (!has(self.key) || self.key == oldSelf.key)",fieldPath=".key",messageExpression=`'key is immutable' + (has(self.key) && has(oldSelf.key) ? ' (' + strings.quote(oldSelf.key) + ' to ' + strings.quote(self.key) + ')' : has(self.key) ? ' (setting it counts)' : ' (removing it counts)') + ': delete and re-create the lock to move it (holders of the old key would not exclude holders of the new one)'`,message="key is immutable: delete and re-create the lock to move it (holders of the old key would not exclude holders of the new one)"
// +kubebuilder:validation:XValidation:rule="!has(self.renewInterval) || !self.renewInterval.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || (has(self.ttl) && (!self.ttl.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || duration(self.ttl) > duration('24h'))) || (duration(self.renewInterval) <= duration('24h') && 200 * int(duration(self.renewInterval)) <= 99 * int(duration(has(self.ttl) ? self.ttl : '30s')) - 200000000)",fieldPath=".renewInterval",messageExpression=`[(99 * int(duration(has(self.ttl) ? self.ttl : '30s')) - 200000000) / 200].map(l, [l < 1000000000 || l % 1000000 != 0 ? 1000000 : 1000000000].map(u, [(l % u) / (u / 1000)].map(f, 'must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms, and renewInterval %s is too long for ttl %s, which %s'.format([self.renewInterval, has(self.ttl) ? self.ttl : '30s', l <= 0 ? 'leaves no room for any renewal' : 'allows up to %d.%s%d%s'.format([l / u, f < 10 ? '00' : f < 100 ? '0' : "", f, u == 1000000 ? 'ms' : 's'])]))[0])[0])[0]`,message="must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms (e.g. ttl 30s allows up to 14.849s)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.minReplicasToWrite) || self.safety.minReplicasToWrite == 0 || !has(self.redis) || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.minReplicasToWrite",reason="FieldValueForbidden",messageExpression=`'replica guards need replicas: use them with Replicated, Sentinel or Cluster mode, not ' + self.redis.mode + ' (Standalone and Redlock servers run without replicas)'`,message="replica guards need replicas: use them with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.storeRef) || !has(self.safety) || ((!has(self.safety.minReplicasToWrite) || self.safety.minReplicasToWrite == 0) && !(has(self.safety.manageReplicaSettings) && self.safety.manageReplicaSettings))",fieldPath=".safety",reason="FieldValueForbidden",message="the replica guard of a store's servers is the store's (spec.safety of the LockStore or ClusterLockStore); a lock on a store may only set waitForReplicas and failoverQuarantine"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.failoverQuarantine) || !self.safety.failoverQuarantine || !has(self.redis) || self.redis.mode != 'Redlock'",fieldPath=".safety.failoverQuarantine",reason="FieldValueForbidden",message="the failover quarantine does not apply to Redlock: its nodes are independent masters, with no failover to wait out (use it with Standalone, Replicated, Sentinel or Cluster)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.failoverQuarantine) || !self.safety.failoverQuarantine || !has(self.redis) || !(self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']) || (has(self.safety.manageReplicaSettings) && self.safety.manageReplicaSettings && has(self.safety.minReplicasToWrite) && self.safety.minReplicasToWrite >= 1)",fieldPath=".safety.failoverQuarantine",reason="FieldValueInvalid",messageExpression=`'the failover quarantine on ' + self.redis.mode + ' needs the replica guard managed: set safety.manageReplicaSettings true and safety.minReplicasToWrite to the number of replicas (its bound holds only while a master cut off from any replica stops taking writes within minReplicasMaxLag; with fewer required, a partitioned old master that keeps one replica goes on granting)'`,message="the failover quarantine on Replicated, Sentinel or Cluster needs the replica guard managed: set safety.manageReplicaSettings true and safety.minReplicasToWrite to the number of replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.waitForReplicas) || self.safety.waitForReplicas == 0 || !has(self.redis) || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.waitForReplicas",reason="FieldValueForbidden",messageExpression=`'waiting for replicas needs replicas: use it with Replicated, Sentinel or Cluster mode, not ' + self.redis.mode + ' (Standalone and Redlock servers run without replicas)'`,message="waiting for replicas needs replicas: use it with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.lineOrder) || self.lineOrder != 'Ticket' || !has(self.redis) || self.redis.mode != 'Redlock'",fieldPath=".lineOrder",reason="FieldValueForbidden",message="lineOrder Ticket orders the waiting line, which Redlock does not have: use Clock (or leave it out) with Redlock"
// +kubebuilder:validation:XValidation:rule="!has(self.fairness) || self.fairness != 'FIFO' || !has(self.redis) || self.redis.mode != 'Redlock'",fieldPath=".fairness",reason="FieldValueForbidden",message="fairness FIFO needs the waiting line, which Redlock does not have (the line would need a quorum of its own): use Default with Redlock"
// +kubebuilder:validation:XValidation:rule="!has(self.maxHold) || !self.maxHold.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || (has(self.ttl) && !self.ttl.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')) || duration(self.maxHold) > duration(has(self.ttl) ? self.ttl : '30s')",fieldPath=".maxHold",messageExpression=`'must be longer than ttl (maxHold %s, ttl %s): the acquisition alone holds the lock for ttl, so a cap no longer than that would never let a renewal happen; shorten ttl instead'.format([self.maxHold, has(self.ttl) ? self.ttl : '30s'])`,message="must be longer than ttl: the acquisition alone holds the lock for ttl, so a cap no longer than that would never let a renewal happen; shorten ttl instead"
// +kubebuilder:validation:XValidation:rule="!has(self.permits) || self.permits == 1 || !has(self.redis) || self.redis.mode != 'Redlock'",fieldPath=".permits",reason="FieldValueForbidden",message="permits above 1 need one Redis deployment: on Redlock a majority of nodes per holder does not bound the holders (3 nodes, 2 permits: holders {a,b}, {a,c}, {b,c} give three holders a majority each); use 1 with Redlock"
// +kubebuilder:validation:XValidation:rule=`!has(self.credentialsSecretName) || !has(self.redis) || [has(self.redis.passwordSecretRef) ? self.redis.passwordSecretRef.name : "", has(self.redis.sentinel) && has(self.redis.sentinel.passwordSecretRef) ? self.redis.sentinel.passwordSecretRef.name : "", has(self.redis.tls) && has(self.redis.tls.caSecretRef) ? self.redis.tls.caSecretRef.name : "", has(self.redis.tls) && has(self.redis.tls.clientCertSecretRef) ? self.redis.tls.clientCertSecretRef.name : "", has(self.controllerAuth) && has(self.controllerAuth.passwordSecretRef) ? self.controllerAuth.passwordSecretRef.name : ""].all(n, n != self.credentialsSecretName)`,fieldPath=".credentialsSecretName",reason="FieldValueInvalid",messageExpression=`'names ' + strings.quote(self.credentialsSecretName) + ', a Secret this lock reads (spec.redis or spec.controllerAuth): the controller writes the credentials Secret itself and never overwrites one it did not write; choose another name'`,message="names a Secret this lock reads (spec.redis or spec.controllerAuth): the controller writes the credentials Secret itself and never overwrites one it did not write; choose another name"
type DistributedLockSpec struct {
	// key is the Redis key of the lock. The fence counter is {key}:fence and
	// the event channel {key}:events, so that all three hash to one Redis
	// Cluster slot. Absent ⇒ "<namespace>/<name>" of this resource. On a
	// ClusterLockStore with isolation ACL the effective key is
	// "<namespace>/<key>" (status.key shows the effective key).
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
	// At least 10ms, and 2 × renewInterval ≤ 0.99 × ttl − 2ms, so that
	// a renewal that fails once can be retried before
	// the lease's local validity (ttl minus the library's default clock
	// drift allowance, 1% + 2ms) runs out.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')",message="must be a duration such as 10s, 500ms or 1m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || duration(self) >= duration('10ms')",message="must be at least 10ms"
	RenewInterval *metav1.Duration `json:"renewInterval,omitempty"`

	// maxHold caps how long one lease may be held in total, renewals
	// included: the watchdog proves that the holder's process is alive,
	// not that its work progresses, so a holder stuck in a loop would keep
	// the lock for as long as it runs. maxHold after the acquisition the
	// lease ends (the holder sees it lost and should stop its work) and
	// the key expires, renewals having been cut short to end there, so
	// that another holder can take it. Longer than ttl, at most 24h. A
	// change applies to leases taken afterwards. Absent ⇒ no cap.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$')",message="must be a duration such as 30m, 1h or 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="must be at most 24h"
	MaxHold *metav1.Duration `json:"maxHold,omitempty"`

	// credentialsSecretName is the name of the credentials Secret the
	// controller writes in this namespace for the lock's pods (username,
	// password, ca.crt, ...) and names in status.credentialsSecretRef, so
	// that the pods' Role can name it before the controller ran. Absent ⇒
	// the name derived from the store (redlease-<store>,
	// redlease-lockstore-<store>) or, inline, from the lock
	// (redlease-lock-<name>). Locks of one namespace on one store share
	// one Redis user: each name they choose holds the same credentials.
	// The prefix "redlease-" is reserved for the derived names. A Secret
	// of that name that the controller did not write for this lock's
	// store is never overwritten: the lock is not Ready
	// (CredentialsSecretConflict). A change writes the new Secret; the
	// old one is deleted once no lock names it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a Secret name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('redlease-')",message="must not start with 'redlease-': that prefix is reserved for the names the controller derives (omit credentialsSecretName to get the derived one)"
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`

	// storeRef names the LockStore (of this namespace) or ClusterLockStore
	// the lock lives on. Exclusive with redis. Immutable.
	// +optional
	StoreRef *StoreReference `json:"storeRef,omitempty"`

	// redis says where the lock lives and how to connect, inline: the lock
	// is then its own store. Exclusive with storeRef.
	// +optional
	Redis RedisSpec `json:"redis,omitzero"`

	// controllerAuth are the credentials the controller uses for an inline
	// lock (INFO, CONFIG for the replica guard and preflight, and reading
	// the holder), so that the pods' credentials (redis.username and
	// passwordSecretRef) need no CONFIG rights. Absent ⇒ the pods'
	// credentials. Inline locks only.
	// +optional
	ControllerAuth *RedisAuth `json:"controllerAuth,omitempty"`

	// safety asks for replication guards (Replicated, Sentinel and Cluster
	// modes only). Absent ⇒ none.
	// +optional
	Safety *SafetySpec `json:"safety,omitempty"`

	// fencing configures fencing tokens. Absent ⇒ enabled.
	// +optional
	// +kubebuilder:default={enabled: true}
	Fencing *FencingSpec `json:"fencing,omitempty"`

	// fairness says who gets the lock when it is free. Default: a release
	// hands the lock to the first pod waiting in the key's Redis-side line
	// (no herd, arrival order), and only a lock freed by expiry (its holder
	// died) goes to whichever pod asks first. FIFO: that one goes to the
	// first in line too (the library's FIFO option; not with Redlock).
	// Absent ⇒ Default.
	// +optional
	Fairness Fairness `json:"fairness,omitempty"`

	// lineOrder is what orders the key's waiting line. Clock: a waiter's
	// arrival by the Redis server's clock. Ticket: the next value of the
	// lock's fence counter, drawn on the server (protocol 7), which no
	// clock step on the master can reorder and which costs a waiter's
	// first attempt one Redis command less; fences then have gaps, and
	// waits no longer record when they began (status.waiting.oldestSince
	// is then absent, lockctl status shows no wait ages). Set Ticket only
	// once every pod using the lock runs redlease with protocol 7: an
	// older pod's waiters, queued by the clock, would be overtaken by
	// every ticket (docs/upgrading.md). Not with Redlock. Absent ⇒ Clock.
	// +optional
	LineOrder LineOrder `json:"lineOrder,omitempty"`

	// permits is how many holders the lock allows at once: 1 is a lock;
	// more make it a semaphore (a semaphore in the library,
	// lockctl run with it), whose every holder has a lease of its own and
	// a fence from the lock's one counter, above every fence before.
	// Lowering it revokes nothing: new holders wait until fewer than it
	// hold. Changing it between 1 and more changes what the key is in
	// Redis (a lock or a semaphore): while holders of one kind hold it,
	// the other kind waits for them. Not with Redlock. Absent ⇒ 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Permits int32 `json:"permits,omitempty"`
}

// Fairness is how a free lock is handed out; see DistributedLockSpec.Fairness.
// +kubebuilder:validation:Enum=Default;FIFO
type Fairness string

const (
	// FairnessDefault hands over releases in arrival order; a lock freed
	// by expiry goes to the first to ask.
	FairnessDefault Fairness = "Default"
	// FairnessFIFO gives every free lock to the first in line.
	FairnessFIFO Fairness = "FIFO"
)

// LineOrder is what orders a lock's waiting line; see
// DistributedLockSpec.LineOrder.
// +kubebuilder:validation:Enum=Clock;Ticket
type LineOrder string

const (
	// LineOrderClock orders waiters by the Redis server's clock.
	LineOrderClock LineOrder = "Clock"
	// LineOrderTicket orders waiters by tickets from the lock's counter.
	LineOrderTicket LineOrder = "Ticket"
)

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

	// pod is the pod of this lock's namespace that identity names: the
	// library's default identity is "<pod name>:<pid>" (POD_NAME, else the
	// hostname), and an identity that is a pod name alone names it too.
	// Absent when no such pod exists. The identity is the holder's own
	// claim: this says which pod it names, not that the pod proved it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`

	// node is the node that pod was scheduled to (its spec.nodeName) when
	// the controller looked it up; absent when the pod is not scheduled or
	// there is no pod.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
}

// PermitHolder is one holder of a semaphore's permits (spec.permits > 1)
// as observed by the controller. It never contains the lock value.
type PermitHolder struct {
	// identity is the holder's identity, the part of its value before the
	// last '/'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Identity string `json:"identity"`

	// fence is the fencing token the holder got with its permit; absent
	// when fencing is disabled.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Fence int64 `json:"fence,omitempty"`

	// since is when the holder took its permit (the Redis server's clock).
	// +required
	Since metav1.Time `json:"since"`
}

// MaxStatusHolders bounds status.holders.
const MaxStatusHolders = 16

// LockWaiting is the lock's waiting line as observed by the controller. It
// never contains a lock value.
type LockWaiting struct {
	// count is how many wait for the lock in its line in Redis, all of
	// them however long the line is (a semaphore's waiters included; while
	// permits move between 1 and more, pods of both kinds may wait). A
	// waiter that died stays counted until its place lapses (twice its
	// ttl plus the hand-off window) or the line reaches it.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// oldestSince is when the longest current wait began, by the Redis
	// server's clock, rounded down to the second; absent when nobody waits.
	// +optional
	OldestSince *metav1.Time `json:"oldestSince,omitempty"`
}

// DistributedLockStatus defines the observed state of DistributedLock.
// Only the controller writes it.
type DistributedLockStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, EndpointsResolved, ReplicationGuarded
	// (Replicated, Sentinel, Cluster), QuorumAvailable (Redlock),
	// Preflight and FailoverQuarantine (with
	// spec.safety.failoverQuarantine). docs/operator.md ("Conditions and
	// troubleshooting") lists every reason and what to do about it.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// key is the lock's effective Redis key: spec.key or
	// "<namespace>/<name>", prefixed with "<namespace>/" on a
	// ClusterLockStore with isolation ACL. The holder
	// and fenceHighWater belong to it. Pods treat a lock without it as not
	// Ready.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key,omitempty"`

	// connection is what a pod needs to reach the lock's Redis: mode,
	// addresses, Sentinel, db and TLS server name, copied from the store
	// (or the inline spec) by the controller.
	// +optional
	Connection *ConnectionStatus `json:"connection,omitempty"`

	// credentialsSecretRef names the Secret in this namespace, written by
	// the controller, that holds the pods' credentials: username,
	// password, ca.crt and, when used, sentinel-username,
	// sentinel-password, tls.crt and tls.key. Pods need get on it and on
	// this DistributedLock, nothing else.
	// +optional
	CredentialsSecretRef *LocalSecretReference `json:"credentialsSecretRef,omitempty"`

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

	// endpoints are the Redis endpoints the controller probed for an inline
	// lock; a lock on a store finds them in the store's status.
	// +optional
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=128
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`

	// holder is the current holder; absent when the lock is free, and for
	// a semaphore (spec.permits > 1), whose holders are in holders.
	// +optional
	Holder *LockHolder `json:"holder,omitempty"`

	// permits is spec.permits as the controller last observed the lock: how
	// many may hold it at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Permits int32 `json:"permits,omitempty"`

	// held is how many hold the lock: 0 or 1 for a lock; for a semaphore
	// its live permits, a permit handed to a waiter that has not confirmed
	// it yet included.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Held int32 `json:"held,omitempty"`

	// holders are a semaphore's confirmed holders, the longest-held first,
	// at most 16 (held counts them all). Absent for a lock (see holder).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Holders []PermitHolder `json:"holders,omitempty"`

	// waiting is the lock's waiting line when the controller last read the
	// lock's key: how many wait and since when the longest has waited.
	// Absent when the line was not read: on Redlock (which has no line),
	// when the servers could not be read, or when the controller's Redis
	// user may not count the line (it lacks ZCARD: see the controller's
	// user in the operator guide).
	// +optional
	Waiting *LockWaiting `json:"waiting,omitempty"`

	// fenceHighWater is the highest fencing token the controller has seen
	// for this key. When the counter in Redis is found below it (clock went
	// back, a failover lost increments), the controller raises the counter
	// above it (reason FenceFloorRaised).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FenceHighWater int64 `json:"fenceHighWater,omitempty"`

	// failoverQuarantine is what pods need to run the lock under
	// spec.safety.failoverQuarantine; absent when it is off. Pods treat a
	// lock that asks for the quarantine without it as not Ready.
	// +optional
	FailoverQuarantine *FailoverQuarantineStatus `json:"failoverQuarantine,omitempty"`

	// quarantinedUntil is when the key's failover quarantine ends, as the
	// controller last read it (rounded up to the second): its server
	// changed (a failover, a restart that may have lost writes, or its
	// epoch record was lost), and nothing is granted until then. Absent
	// when no quarantine holds grants back.
	// +optional
	QuarantinedUntil *metav1.Time `json:"quarantinedUntil,omitempty"`
}

// FailoverQuarantineStatus is what pods need to run a lock under the
// failover quarantine (lock.WithFailoverQuarantine), and what the
// controller remembers of the key's epoch record.
type FailoverQuarantineStatus struct {
	// cutoff bounds how long a master cut off from its replicas may still
	// accept writes: the replica guard's minReplicasMaxLag plus 2s (the
	// master counts a replica's lag in whole seconds, and recounts its good
	// replicas once a second) on Replicated, Sentinel and Cluster, 0 on
	// Standalone. The quarantine after a failover lasts the
	// key's longest TTL plus cutoff plus 2 %.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	Cutoff metav1.Duration `json:"cutoff"`

	// epochRecorded is when the controller first wrote the key's epoch
	// record (before any pod used the key). From then on a record found
	// missing was lost (with a failover or a restart) and starts a
	// quarantine, instead of being written afresh as a new key's.
	// +optional
	EpochRecorded *metav1.Time `json:"epochRecorded,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dlock,categories=redlease
// +kubebuilder:printcolumn:name="StoreKind",type=string,JSONPath=`.spec.storeRef.kind`
// +kubebuilder:printcolumn:name="Store",type=string,JSONPath=`.spec.storeRef.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.connection.mode`
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.status.key`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Holder",type=string,JSONPath=`.status.holder.identity`
// +kubebuilder:printcolumn:name="Fence",type=integer,JSONPath=`.status.holder.fence`
// +kubebuilder:printcolumn:name="Permits",type=integer,JSONPath=`.status.permits`
// +kubebuilder:printcolumn:name="Held",type=integer,JSONPath=`.status.held`
// +kubebuilder:printcolumn:name="Waiters",type=integer,JSONPath=`.status.waiting.count`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.holder.node`,priority=1
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=`.spec.ttl`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

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

// FailoverQuarantine reports whether spec.safety.failoverQuarantine is on.
func (s *DistributedLockSpec) FailoverQuarantine() bool {
	return s.Safety != nil && s.Safety.FailoverQuarantine
}

// FencingEnabled reports whether fencing tokens are on: true unless
// spec.fencing.enabled is explicitly false.
func (s *DistributedLockSpec) FencingEnabled() bool {
	return s.Fencing == nil || s.Fencing.Enabled == nil || *s.Fencing.Enabled
}

// FIFO reports whether spec.fairness asks for strict FIFO.
func (s *DistributedLockSpec) FIFO() bool { return s.Fairness == FairnessFIFO }

// TicketOrder reports whether spec.lineOrder asks for ticket order.
func (s *DistributedLockSpec) TicketOrder() bool { return s.LineOrder == LineOrderTicket }

// PermitsOrDefault returns spec.permits, or 1 when it is unset (an object
// that has not been through the API server).
func (s *DistributedLockSpec) PermitsOrDefault() int {
	if s.Permits < 1 {
		return 1
	}
	return int(s.Permits)
}

// Semaphore reports whether the lock allows more than one holder.
func (s *DistributedLockSpec) Semaphore() bool { return s.PermitsOrDefault() > 1 }

// Inline reports whether the lock names its Redis servers itself
// (spec.redis) instead of a store (spec.storeRef).
func (s *DistributedLockSpec) Inline() bool { return s.StoreRef == nil }

// EffectiveKey is the Redis key of the lock: spec.key, or
// "<namespace>/<name>" when it is empty. Under a store's ACL isolation
// (isolated) the key is always in the namespace's key space:
// "<namespace>/" + (spec.key or the lock's name). status.key publishes it.
func (dl *DistributedLock) EffectiveKey(isolated bool) string {
	switch {
	case isolated && dl.Spec.Key != "":
		return dl.Namespace + "/" + dl.Spec.Key
	case dl.Spec.Key != "":
		return dl.Spec.Key
	default:
		return dl.Namespace + "/" + dl.Name
	}
}

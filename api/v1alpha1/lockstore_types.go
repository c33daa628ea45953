/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// StoreKind is the kind of store a DistributedLock lives on.
// +kubebuilder:validation:Enum=LockStore;ClusterLockStore
type StoreKind string

const (
	// StoreKindLockStore is a LockStore in the lock's namespace.
	StoreKindLockStore StoreKind = "LockStore"
	// StoreKindClusterLockStore is a ClusterLockStore, shared by the
	// namespaces its tenants.namespaceSelector selects.
	StoreKindClusterLockStore StoreKind = "ClusterLockStore"
)

// StoreReference names the store a DistributedLock lives on.
type StoreReference struct {
	// kind is LockStore (in the lock's namespace) or ClusterLockStore.
	// +required
	Kind StoreKind `json:"kind"`

	// name of the store.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be an object name: lower-case letters, digits, '-' and '.'"
	Name string `json:"name"`
}

// Isolation is how a ClusterLockStore keeps its tenant namespaces apart.
// +kubebuilder:validation:Enum=ACL;None
type Isolation string

const (
	// IsolationACL gives each namespace its own Redis ACL user, allowed only
	// the library's commands on keys and channels under "<namespace>/".
	IsolationACL Isolation = "ACL"
	// IsolationNone gives every namespace the store's clientAuth: anyone
	// with it can take or break any lock on the store.
	IsolationNone Isolation = "None"
)

// TenantScripts says what Lua a store's tenant users may run.
// +kubebuilder:validation:Enum=Scripts;FunctionsOnly
type TenantScripts string

const (
	// TenantScriptsScripts lets tenants run the protocol's Lua as scripts
	// (EVAL, EVALSHA) as well as call the library's functions (FCALL,
	// FCALL_RO) where the servers have them: what pods of every release
	// need. EVAL runs any Lua, so a tenant can stall the shared server.
	TenantScriptsScripts TenantScripts = "Scripts"
	// TenantScriptsFunctionsOnly lets tenants only call the functions of
	// the library the controller loads (FCALL, FCALL_RO): no EVAL,
	// EVALSHA, SCRIPT or FUNCTION. Pods must run a release that calls
	// functions (docs/upgrading.md). Where the servers have no functions
	// (older than Redis 7.0, FUNCTION forbidden) tenants keep scripts and
	// the FunctionsLoaded condition says so.
	TenantScriptsFunctionsOnly TenantScripts = "FunctionsOnly"
)

// TenantsSpec says which namespaces may use a ClusterLockStore and how
// they are kept apart.
//
// +kubebuilder:validation:XValidation:rule="!has(self.scripts) || self.scripts != 'FunctionsOnly' || !has(self.isolation) || self.isolation == 'ACL'",fieldPath=".scripts",reason="FieldValueForbidden",message="scripts: FunctionsOnly restricts each namespace's Redis user: it needs isolation ACL (under None every namespace uses clientAuth)"
type TenantsSpec struct {
	// namespaceSelector selects the namespaces whose DistributedLocks may
	// use the store. Absent ⇒ none; {} ⇒ every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// isolation is ACL (one Redis ACL user per namespace, keys forced under
	// "<namespace>/") or None (every namespace uses clientAuth).
	// Immutable. Default ACL.
	// +optional
	// +kubebuilder:default=ACL
	Isolation Isolation `json:"isolation,omitempty"`

	// scripts is what Lua the tenants' Redis users may run under isolation
	// ACL: Scripts (EVAL and EVALSHA, and FCALL where the servers have
	// functions) or FunctionsOnly (only FCALL and FCALL_RO of the library
	// the controller loads on every master). Switch to FunctionsOnly once
	// every pod using the store runs a release that calls functions.
	// Default Scripts.
	// +optional
	// +kubebuilder:default=Scripts
	Scripts TenantScripts `json:"scripts,omitempty"`
}

// LockStoreSpec describes one Redis deployment that DistributedLocks of its
// namespace use through spec.storeRef.
//
// +kubebuilder:validation:XValidation:rule="!has(self.redis.username) && !has(self.redis.passwordSecretRef)",fieldPath=".redis",reason="FieldValueForbidden",message="on a store, the pods' credentials are clientAuth and the controller's are controllerAuth (redis.username and redis.passwordSecretRef are for inline locks)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.waitForReplicas) || self.safety.waitForReplicas == 0",fieldPath=".safety.waitForReplicas",reason="FieldValueForbidden",message="waitForReplicas is per lock: set it on the DistributedLocks that need it"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.failoverQuarantine) || !self.safety.failoverQuarantine",fieldPath=".safety.failoverQuarantine",reason="FieldValueForbidden",message="failoverQuarantine is per lock: set it on the DistributedLocks that need it (the store's replica guard is what makes it sound)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.minReplicasToWrite) || self.safety.minReplicasToWrite == 0 || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.minReplicasToWrite",reason="FieldValueForbidden",messageExpression=`'replica guards need replicas: use them with Replicated, Sentinel or Cluster mode, not ' + self.redis.mode + ' (Standalone and Redlock servers run without replicas)'`,message="replica guards need replicas: use them with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.controllerAuth) || !has(self.controllerAuth.passwordSecretRef) || !has(self.controllerAuth.passwordSecretRef.namespace)",fieldPath=".controllerAuth.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.clientAuth) || !has(self.clientAuth.passwordSecretRef) || !has(self.clientAuth.passwordSecretRef.namespace)",fieldPath=".clientAuth.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.sentinel) || !has(self.redis.sentinel.passwordSecretRef) || !has(self.redis.sentinel.passwordSecretRef.namespace)",fieldPath=".redis.sentinel.passwordSecretRef.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.tls) || !has(self.redis.tls.caSecretRef) || !has(self.redis.tls.caSecretRef.namespace)",fieldPath=".redis.tls.caSecretRef.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.tls) || !has(self.redis.tls.clientCertSecretRef) || !has(self.redis.tls.clientCertSecretRef.namespace)",fieldPath=".redis.tls.clientCertSecretRef.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.service) || !has(self.redis.service.namespace)",fieldPath=".redis.service.namespace",reason="FieldValueForbidden",message="a LockStore uses Secrets and Services of its own namespace only"
type LockStoreSpec struct {
	// redis is the topology and TLS of the servers (the type inline locks
	// use; its username and passwordSecretRef are not used on a store).
	// +required
	Redis RedisSpec `json:"redis"`

	// controllerAuth are the credentials only the controller uses (INFO,
	// CONFIG for the replica guard and preflight, ACL for tenants, reading
	// holders). Absent ⇒ no AUTH.
	// +optional
	ControllerAuth *RedisAuth `json:"controllerAuth,omitempty"`

	// clientAuth are the credentials pods use, copied by the controller
	// into the credentials Secret of each namespace with locks on the
	// store. Absent ⇒ no AUTH.
	// +optional
	ClientAuth *RedisAuth `json:"clientAuth,omitempty"`

	// safety is the server-wide replica guard (minReplicasToWrite,
	// minReplicasMaxLag, manageReplicaSettings) of the store's masters; a
	// store's settings win over inline locks on the same servers.
	// waitForReplicas is per lock. Absent ⇒ no guard.
	// +optional
	Safety *SafetySpec `json:"safety,omitempty"`
}

// ClusterLockStoreSpec describes one Redis deployment that a platform team
// shares with the namespaces tenants selects.
//
// +kubebuilder:validation:XValidation:rule="!has(self.redis.username) && !has(self.redis.passwordSecretRef)",fieldPath=".redis",reason="FieldValueForbidden",message="on a store, the pods' credentials are clientAuth and the controller's are controllerAuth (redis.username and redis.passwordSecretRef are for inline locks)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.waitForReplicas) || self.safety.waitForReplicas == 0",fieldPath=".safety.waitForReplicas",reason="FieldValueForbidden",message="waitForReplicas is per lock: set it on the DistributedLocks that need it"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.failoverQuarantine) || !self.safety.failoverQuarantine",fieldPath=".safety.failoverQuarantine",reason="FieldValueForbidden",message="failoverQuarantine is per lock: set it on the DistributedLocks that need it (the store's replica guard is what makes it sound)"
// +kubebuilder:validation:XValidation:rule="!has(self.safety) || !has(self.safety.minReplicasToWrite) || self.safety.minReplicasToWrite == 0 || self.redis.mode in ['Replicated', 'Sentinel', 'Cluster']",fieldPath=".safety.minReplicasToWrite",reason="FieldValueForbidden",messageExpression=`'replica guards need replicas: use them with Replicated, Sentinel or Cluster mode, not ' + self.redis.mode + ' (Standalone and Redlock servers run without replicas)'`,message="replica guards need replicas: use them with Replicated, Sentinel or Cluster mode (Standalone and Redlock servers run without replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.controllerAuth) || !has(self.controllerAuth.passwordSecretRef) || has(self.controllerAuth.passwordSecretRef.namespace)",fieldPath=".controllerAuth.passwordSecretRef.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.clientAuth) || !has(self.clientAuth.passwordSecretRef) || has(self.clientAuth.passwordSecretRef.namespace)",fieldPath=".clientAuth.passwordSecretRef.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.sentinel) || !has(self.redis.sentinel.passwordSecretRef) || has(self.redis.sentinel.passwordSecretRef.namespace)",fieldPath=".redis.sentinel.passwordSecretRef.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.tls) || !has(self.redis.tls.caSecretRef) || has(self.redis.tls.caSecretRef.namespace)",fieldPath=".redis.tls.caSecretRef.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.tls) || !has(self.redis.tls.clientCertSecretRef) || has(self.redis.tls.clientCertSecretRef.namespace)",fieldPath=".redis.tls.clientCertSecretRef.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.redis.service) || has(self.redis.service.namespace)",fieldPath=".redis.service.namespace",reason="FieldValueRequired",message="a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
// +kubebuilder:validation:XValidation:rule="!has(self.clientAuth) || (has(self.tenants) && self.tenants.isolation == 'None')",fieldPath=".clientAuth",reason="FieldValueForbidden",message="isolation: ACL gives each namespace a generated Redis user: clientAuth is for isolation: None"
// +kubebuilder:validation:XValidation:rule="(has(self.tenants) && has(self.tenants.isolation) ? self.tenants.isolation : 'ACL') == (has(oldSelf.tenants) && has(oldSelf.tenants.isolation) ? oldSelf.tenants.isolation : 'ACL')",fieldPath=".tenants.isolation",messageExpression=`'tenants.isolation is immutable (' + (has(oldSelf.tenants) && has(oldSelf.tenants.isolation) ? oldSelf.tenants.isolation : 'ACL') + ' to ' + (has(self.tenants) && has(self.tenants.isolation) ? self.tenants.isolation : 'ACL') + '): create another store to change how tenants are kept apart'`,message="tenants.isolation is immutable: create another store to change how tenants are kept apart"
type ClusterLockStoreSpec struct {
	// redis is the topology and TLS of the servers. Every Secret and
	// Service reference in it names its namespace.
	// +required
	Redis RedisSpec `json:"redis"`

	// controllerAuth are the credentials only the controller uses (INFO,
	// CONFIG, ACL SETUSER/DELUSER for tenants, reading holders). Under
	// isolation ACL they need the ACL command. Absent ⇒ no AUTH.
	// +optional
	ControllerAuth *RedisAuth `json:"controllerAuth,omitempty"`

	// clientAuth are the credentials pods use under isolation None.
	// Absent ⇒ no AUTH.
	// +optional
	ClientAuth *RedisAuth `json:"clientAuth,omitempty"`

	// safety is the server-wide replica guard of the store's masters.
	// +optional
	Safety *SafetySpec `json:"safety,omitempty"`

	// tenants says which namespaces may use the store and how they are kept
	// apart. Absent ⇒ no namespace may use it.
	// +optional
	Tenants *TenantsSpec `json:"tenants,omitempty"`
}

// LockStoreStatus is what the controller observed of a store's servers.
type LockStoreStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, EndpointsResolved, ReplicationGuarded or
	// QuorumAvailable, Preflight, FunctionsLoaded, and TenantsProvisioned.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// master is the server that takes writes (Standalone, Replicated,
	// Sentinel); Cluster masters are in endpoints with their slots.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Master string `json:"master,omitempty"`

	// quorum is the number of nodes a Redlock lease needs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Quorum int32 `json:"quorum,omitempty"`

	// endpoints are the Redis endpoints the controller probed.
	// +optional
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=128
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`

	// tenants is the number of namespaces provisioned (ClusterLockStore).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Tenants int32 `json:"tenants,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lstore,categories=redlease
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.redis.mode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Master",type=string,JSONPath=`.status.master`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

// LockStore is a Redis deployment that a team owns and the DistributedLocks
// of its namespace use through spec.storeRef.
type LockStore struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec describes the Redis deployment.
	// +required
	Spec LockStoreSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	Status LockStoreStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// LockStoreList contains a list of LockStore.
type LockStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []LockStore `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=clstore,categories=redlease
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.redis.mode`
// +kubebuilder:printcolumn:name="Isolation",type=string,JSONPath=`.spec.tenants.isolation`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Tenants",type=integer,JSONPath=`.status.tenants`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

// ClusterLockStore is a Redis deployment that a platform team owns and
// shares with the namespaces it selects; under isolation ACL each
// namespace gets its own Redis user and key space.
type ClusterLockStore struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec describes the Redis deployment and its tenants.
	// +required
	Spec ClusterLockStoreSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	Status LockStoreStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// ClusterLockStoreList contains a list of ClusterLockStore.
type ClusterLockStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []ClusterLockStore `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &LockStore{}, &LockStoreList{}, &ClusterLockStore{}, &ClusterLockStoreList{})
		return nil
	})
}

// IsolationOrDefault is tenants.isolation, or ACL (the schema default)
// when it is unset.
func (s *ClusterLockStoreSpec) IsolationOrDefault() Isolation {
	if s.Tenants == nil || s.Tenants.Isolation == "" {
		return IsolationACL
	}
	return s.Tenants.Isolation
}

// ScriptsOrDefault is tenants.scripts, or Scripts (the schema default)
// when it is unset.
func (t *TenantsSpec) ScriptsOrDefault() TenantScripts {
	if t == nil || t.Scripts == "" {
		return TenantScriptsScripts
	}
	return t.Scripts
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ReleaseMode is how a LockRelease frees a lock.
// +kubebuilder:validation:Enum=Revoke;Force
type ReleaseMode string

const (
	// ReleaseModeRevoke refuses the holder's renewals and grants nothing
	// until the key's current expiry has run out: no two holders' claimed
	// validity overlaps.
	ReleaseModeRevoke ReleaseMode = "Revoke"
	// ReleaseModeForce frees the key now, after raising the fence counter
	// above the holder's fence: it breaks exclusion while the old holder
	// still runs, and fenced stores refuse its late writes.
	ReleaseModeForce ReleaseMode = "Force"
)

// LockReleaseSpec is one break-glass request.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a LockRelease is a one-time request: its spec cannot change; create another"
type LockReleaseSpec struct {
	// lockName is the DistributedLock to release, in this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	LockName string `json:"lockName"`

	// mode is Revoke (the default: the holder's renewals are refused and
	// nothing is granted until the key's current expiry has run out) or
	// Force (the key is freed now, after the fence counter is raised above
	// the holder's fence; this breaks exclusion while the old holder still
	// runs, and only fenced stores keep its late writes out).
	// +optional
	// +kubebuilder:default=Revoke
	Mode ReleaseMode `json:"mode,omitempty"`

	// fence, when set, is the holder's fence as the requester saw it (the
	// lock's status.holder.fence): the request is refused when the lock's
	// fence counter differs, because the holder changed since.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Fence *int64 `json:"fence,omitempty"`

	// requestedBy is the user name of the requester. An admission policy
	// shipped with the chart requires it to equal the name the API server
	// authenticated on creation, so the Event on the lock names the
	// requester truthfully.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	RequestedBy string `json:"requestedBy"`
}

// LockReleaseStatus is what the controller did.
type LockReleaseStatus struct {
	// conditions: Complete is True when the lock was revoked or forced
	// (reason Revoked or Forced), False when the request was refused and
	// will not be retried (reasons LockNotFound, Refused, Unsupported), and
	// Unknown while the controller could not act yet (reason Pending).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// holder is the identity of the holder found on the key when the
	// controller acted.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Holder string `json:"holder,omitempty"`

	// fence is the lock's fence counter when the controller acted: the
	// revoked holder's fence when it took the lock with fencing.
	// +optional
	Fence int64 `json:"fence,omitempty"`

	// raisedFence is the fence counter after a Force: every later holder's
	// fence is above it.
	// +optional
	RaisedFence int64 `json:"raisedFence,omitempty"`

	// grantsResumeAt is, after a Revoke, when the revoked key expires:
	// nothing is granted before it.
	// +optional
	GrantsResumeAt *metav1.Time `json:"grantsResumeAt,omitempty"`

	// outcome says in words what happened.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Outcome string `json:"outcome,omitempty"`
}

// Condition type and reasons of a LockRelease.
const (
	// ConditionComplete says whether the controller acted on the request.
	ConditionComplete = "Complete"
	// ReasonRevoked: the holder was revoked.
	ReasonRevoked = "Revoked"
	// ReasonForced: the key was freed with the fence counter raised.
	ReasonForced = "Forced"
	// ReasonPending: the controller could not act yet (the lock's servers
	// unreadable); it tries again.
	ReasonPending = "Pending"
	// ReasonLockNotFound: the DistributedLock does not exist.
	ReasonLockNotFound = "LockNotFound"
	// ReasonRefused: the key was free, a semaphore's, already revoked, or
	// held by another holder than the one the request named.
	ReasonRefused = "Refused"
	// ReasonUnsupported: the lock's mode (Redlock) has no break-glass.
	ReasonUnsupported = "Unsupported"
	// ReasonLockReleased is the reason of the Event on the DistributedLock.
	ReasonLockReleased = "LockReleased"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lockrel,categories=redlease
// +kubebuilder:printcolumn:name="Lock",type=string,JSONPath=`.spec.lockName`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="By",type=string,JSONPath=`.spec.requestedBy`
// +kubebuilder:printcolumn:name="Complete",type=string,JSONPath=`.status.conditions[?(@.type=="Complete")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Complete")].reason`
// +kubebuilder:printcolumn:name="Holder",type=string,JSONPath=`.status.holder`
// +kubebuilder:printcolumn:name="Fence",type=integer,JSONPath=`.status.fence`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.outcome`,priority=1

// LockRelease is a break-glass request on a DistributedLock: revoke its
// holder, or force its key free. The controller acts once and keeps the
// object as a record; delete it when no longer needed.
type LockRelease struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the request.
	// +required
	Spec LockReleaseSpec `json:"spec"`

	// status is what the controller did.
	// +optional
	Status LockReleaseStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// LockReleaseList contains a list of LockRelease.
type LockReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []LockRelease `json:"items"`
}

// ModeOrDefault is spec.mode, Revoke when empty.
func (s *LockReleaseSpec) ModeOrDefault() ReleaseMode {
	if s.Mode == "" {
		return ReleaseModeRevoke
	}
	return s.Mode
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &LockRelease{}, &LockReleaseList{})
		return nil
	})
}

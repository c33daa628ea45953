package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
)

// emitTransitions records Events on obj (a lock or a store) for what
// changed between the old and new conditions: Ready becoming False (or
// changing its reason while False) or True again (not the first time),
// Preflight becoming False or ConfigUnavailable (a check it could not
// make), a SettingsConflict appearing, FunctionsLoaded or
// TenantsProvisioned becoming False, FailoverQuarantine becoming False or
// a quarantine starting, the master moving. Idle reconciles
// emit nothing. Notes are condition messages, which never contain a lock value.
func (r *DistributedLockReconciler) emitTransitions(obj runtime.Object, conds, old []metav1.Condition, oldMaster, master string) {
	if c, changed := transition(old, conds, v1alpha1.ConditionReady); changed && (c.Status != metav1.ConditionTrue || meta.FindStatusCondition(old, v1alpha1.ConditionReady) != nil) {
		// The first Ready is routine and gets no Event: 10,000 locks
		// applied together would write as many Events as status patches.
		if c.Status == metav1.ConditionTrue {
			r.recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonAvailable, "Probe", "Ready: %s", c.Message)
		} else {
			r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Probe", "Not ready: %s", c.Message)
		}
	}
	if c, changed := transition(old, conds, v1alpha1.ConditionPreflight); changed && (c.Status == metav1.ConditionFalse || c.Reason == v1alpha1.ReasonConfigUnavailable) {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Preflight", "%s", c.Message)
	}
	if c, changed := transition(old, conds, v1alpha1.ConditionReplicationGuarded); changed && c.Reason == v1alpha1.ReasonSettingsConflict {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonSettingsConflict, "ApplyReplicaSettings", "%s", c.Message)
	}
	if c, changed := transition(old, conds, v1alpha1.ConditionFunctionsLoaded); changed && c.Status == metav1.ConditionFalse {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "LoadLibrary", "%s", c.Message)
	}
	if c, changed := transition(old, conds, v1alpha1.ConditionTenantsProvisioned); changed && c.Status == metav1.ConditionFalse {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "ProvisionTenants", "%s", c.Message)
	}
	if c, changed := transition(old, conds, v1alpha1.ConditionFailoverQuarantine); changed && (c.Status == metav1.ConditionFalse || c.Reason == v1alpha1.ReasonQuarantined) {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "FailoverQuarantine", "%s", c.Message)
	}
	if oldMaster != "" && master != "" && oldMaster != master {
		r.recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonMasterChanged, "Probe", "master moved from %s to %s", oldMaster, master)
	}
}

// transition returns condition typ of conds and whether its status or
// reason differs from old's.
func transition(old, conds []metav1.Condition, typ string) (*metav1.Condition, bool) {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return nil, false
	}
	o := meta.FindStatusCondition(old, typ)
	return c, o == nil || o.Status != c.Status || o.Reason != c.Reason
}

// emitDeleted says, on the deleted object's name, that Redis was left
// alone. The Event outlives the object (kubectl get events shows it).
func (r *DistributedLockReconciler) emitDeleted(nn types.NamespacedName, st *lockState) {
	gone := &v1alpha1.DistributedLock{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DistributedLock"},
		ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, UID: st.uid},
	}
	r.recorder.Eventf(gone, nil, corev1.EventTypeNormal, v1alpha1.ReasonDeleted, "Delete",
		"DistributedLock deleted; Redis left alone: live leases on key %q run to their TTL, its fence counter stays (a re-created lock keeps increasing fences), replica settings stay", st.getKey())
}

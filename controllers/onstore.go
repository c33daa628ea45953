/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/protocol"
)

// observeOnStore reconciles a lock that lives on a store. The store's own
// reconcile probes the servers, guards them and provisions credentials,
// once per store; the lock only checks that it may use the store, reads
// its own key on the master(s) the store's status names, and publishes what
// its pods need. It returns a terminal error for a spec retries cannot fix.
func (r *DistributedLockReconciler) observeOnStore(ctx context.Context, rd *round) error {
	dl := rd.dl
	rd.key = dl.EffectiveKey(false)
	found, err := r.lookupStore(ctx, dl.Namespace, dl.Spec.StoreRef)
	if err != nil {
		rd.fail(v1alpha1.ReasonStoreNotFound, err.Error())
		rd.storeReady = result(metav1.ConditionFalse, v1alpha1.ReasonStoreNotFound, err.Error())
		return nil
	}
	rd.store = found.spec
	rd.key = dl.EffectiveKey(found.spec.isolation == v1alpha1.IsolationACL)
	if !r.mayUseStore(ctx, rd, found) {
		return nil
	}
	// Set before the lock's own checks: an invalid lock on a Ready store
	// still reports StoreReady (every condition needs a status).
	rd.storeReady = result(metav1.ConditionTrue, v1alpha1.ReasonStoreReady, fmt.Sprintf("%s is Ready and provisioned this namespace", found.spec.requester()))
	if err := r.checkLockSpec(rd); err != nil {
		return err
	}
	if !r.loadCredentials(ctx, rd) {
		return nil
	}
	if !r.mastersFromStore(rd, found.status) {
		return nil
	}
	r.checkReplicasFromStore(rd, found.status)
	r.observeHolder(ctx, rd)
	r.observeQuarantine(ctx, rd, found.status)
	rd.connection = connectionOf(rd.store, rd.masterAddr, storeMasters(found.status))
	return nil
}

// foundStore is a store as a lock sees it.
type foundStore struct {
	spec   *storeSpec
	status *v1alpha1.LockStoreStatus
	// tenants of a ClusterLockStore; nil for a LockStore.
	tenants *v1alpha1.TenantsSpec
}

// lookupStore reads the store ref names: a LockStore in namespace ns or a
// ClusterLockStore. Its error says what is missing.
func (r *DistributedLockReconciler) lookupStore(ctx context.Context, ns string, ref *v1alpha1.StoreReference) (foundStore, error) {
	switch ref.Kind {
	case v1alpha1.StoreKindClusterLockStore:
		var cs v1alpha1.ClusterLockStore
		if err := r.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, &cs); err != nil {
			return foundStore{}, storeLookupError(ref, ns, err)
		}
		return foundStore{spec: clusterStoreSpec(&cs), status: &cs.Status, tenants: tenantsOrNone(cs.Spec.Tenants)}, nil
	default:
		var ls v1alpha1.LockStore
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &ls); err != nil {
			return foundStore{}, storeLookupError(ref, ns, err)
		}
		return foundStore{spec: lockStoreSpec(&ls), status: &ls.Status}, nil
	}
}

// tenantsOrNone is a ClusterLockStore's tenants, never nil (absent: no
// namespace may use the store).
func tenantsOrNone(t *v1alpha1.TenantsSpec) *v1alpha1.TenantsSpec {
	if t == nil {
		return &v1alpha1.TenantsSpec{}
	}
	return t
}

func storeLookupError(ref *v1alpha1.StoreReference, ns string, err error) error {
	where := fmt.Sprintf("%s %q", ref.Kind, ref.Name)
	if ref.Kind == v1alpha1.StoreKindLockStore {
		where += " in namespace " + ns
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s does not exist", where)
	}
	return fmt.Errorf("reading %s: %w", where, err)
}

// mayUseStore checks that the lock's namespace is a tenant of the store,
// that the store is Ready, and that its credentials Secret is in the
// lock's namespace. It records the first failure in rd.
func (r *DistributedLockReconciler) mayUseStore(ctx context.Context, rd *round, found foundStore) bool {
	ns := rd.dl.Namespace
	fail := func(reason, msg string) bool {
		rd.fail(reason, msg)
		rd.storeReady = result(metav1.ConditionFalse, reason, msg)
		return false
	}
	if found.tenants != nil {
		allowed, err := r.namespaceAllowed(ctx, found.tenants, ns)
		if err != nil {
			return fail(v1alpha1.ReasonNamespaceNotAllowed, err.Error())
		}
		if !allowed {
			return fail(v1alpha1.ReasonNamespaceNotAllowed, fmt.Sprintf("%s's tenants.namespaceSelector does not select namespace %s: ask the store's owners to add it", found.spec.requester(), ns))
		}
	}
	if c := meta.FindStatusCondition(found.status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		why := "not observed yet"
		if c != nil {
			why = c.Reason + ": " + c.Message
		}
		return fail(v1alpha1.ReasonStoreNotReady, fmt.Sprintf("%s is not Ready (%s)", found.spec.requester(), why))
	}
	name := podrbac.LockSecretName(rd.dl)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	nn := types.NamespacedName{Namespace: ns, Name: name}
	if err := r.kube.Get(ctx, nn, meta); err != nil {
		return fail(v1alpha1.ReasonCredentialsNotProvisioned, fmt.Sprintf("the credentials Secret %s/%s of %s is not written yet", ns, name, found.spec.requester()))
	}
	if meta.GetLabels()[v1alpha1.LabelStoreUID] != string(found.spec.uid) {
		// Someone else's Secret, or another store's: the store left it
		// as it is, and the pods must not read it.
		return fail(v1alpha1.ReasonCredentialsSecretConflict, (&secretConflictError{secret: nn, owner: found.spec.requester()}).Error())
	}
	if found.spec.isolation == v1alpha1.IsolationACL && rd.dl.Spec.FailoverQuarantine() && meta.GetAnnotations()[annotationQuarantineRights] != "true" {
		return fail(v1alpha1.ReasonCredentialsNotProvisioned, fmt.Sprintf("%s has not yet given namespace %s's Redis user INFO server and replication, which the failover quarantine's scripts read", found.spec.requester(), ns))
	}
	rd.credentialsSecret = name
	return true
}

// mastersFromStore sets the server(s) that take the lock's writes from the
// store's status: every Redlock node, the master serving the key's slot on
// a Cluster, else the store's master.
func (r *DistributedLockReconciler) mastersFromStore(rd *round, st *v1alpha1.LockStoreStatus) bool {
	switch rd.store.redis.Mode {
	case v1alpha1.RedisModeRedlock:
		rd.quorumN = redlockQuorum(rd.store.redis)
	case v1alpha1.RedisModeCluster:
		rd.slot = protocol.KeySlot(rd.key)
	}
	addrs := keyServers(rd.store, st, rd.key)
	if len(addrs) == 0 {
		rd.fail(v1alpha1.ReasonMasterUnknown, fmt.Sprintf("%s's status names no master for the key", rd.store.requester()))
		return false
	}
	for _, a := range addrs {
		c, err := rd.client(a, false)
		e := &endpoint{addr: a, client: c, probed: true, err: err}
		rd.masters = append(rd.masters, e)
	}
	if rd.store.redis.Mode != v1alpha1.RedisModeRedlock {
		rd.master, rd.masterAddr = rd.masters[0], addrs[0]
	}
	return true
}

// checkReplicasFromStore checks waitForReplicas against the replicas the
// store's status counts on the lock's master (the store guards the
// servers; the lock only waits for acknowledgements).
func (r *DistributedLockReconciler) checkReplicasFromStore(rd *round, st *v1alpha1.LockStoreStatus) {
	s := rd.dl.Spec.Safety
	if s == nil || s.WaitForReplicas == 0 || rd.master == nil {
		return
	}
	for _, e := range st.Endpoints {
		if e.Address != rd.masterAddr {
			continue
		}
		if e.ConnectedReplicas == nil || *e.ConnectedReplicas < s.WaitForReplicas {
			got := int32(0)
			if e.ConnectedReplicas != nil {
				got = *e.ConnectedReplicas
			}
			rd.guard = result(metav1.ConditionFalse, v1alpha1.ReasonReplicasInsufficient,
				fmt.Sprintf("%s has %d connected replica(s), waitForReplicas needs %d: acquisitions fail", rd.masterAddr, got, s.WaitForReplicas))
			return
		}
		rd.guard = result(metav1.ConditionTrue, v1alpha1.ReasonGuardApplied, fmt.Sprintf("%d replica(s) connected for waitForReplicas on %s", *e.ConnectedReplicas, rd.masterAddr))
		return
	}
}

// readyOnStore is the Ready condition of a lock on a store.
func readyOnStore(rd *round) conditionResult {
	var c conditionResult
	switch {
	case rd.failReason != "":
		c = result(metav1.ConditionFalse, rd.failReason, rd.failMessage)
	case rd.guard.set && rd.guard.status != metav1.ConditionTrue:
		c = result(metav1.ConditionFalse, rd.guard.reason, rd.guard.message)
	case rd.quarantine.unsound():
		c = result(metav1.ConditionFalse, rd.quarantine.cond.reason, rd.quarantine.cond.message)
	case rd.store.redis.Mode == v1alpha1.RedisModeRedlock:
		c = result(metav1.ConditionTrue, v1alpha1.ReasonAvailable, fmt.Sprintf("on %s: Redlock, quorum %d of %d", rd.store.requester(), rd.quorumN, len(rd.masters)))
	default:
		c = result(metav1.ConditionTrue, v1alpha1.ReasonAvailable, fmt.Sprintf("on %s: the key's master is %s", rd.store.requester(), rd.masterAddr))
	}
	for _, note := range rd.raised {
		c.message += "; " + v1alpha1.ReasonFenceFloorRaised + ": " + note
	}
	return c
}

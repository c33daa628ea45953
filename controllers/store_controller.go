/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/backoff"
)

// +kubebuilder:rbac:groups=redlease.io,resources=lockstores;clusterlockstores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=redlease.io,resources=lockstores/status;clusterlockstores/status,verbs=get;patch
// +kubebuilder:rbac:groups=redlease.io,resources=clusterlockstores/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;delete

// aclFinalizer keeps a ClusterLockStore with ACL isolation until the
// controller has deleted its tenants' Redis users.
const aclFinalizer = "redlease.io/acl-users"

// StoreReconciler reconciles LockStores or ClusterLockStores (one of each
// runs): it resolves, probes and guards the store's servers once per probe
// interval however many locks use it, provisions its tenants' credentials
// (and under isolation ACL their Redis users), and reports it all in the
// store's status. Locks read that status.
type StoreReconciler struct {
	*DistributedLockReconciler
	kind v1alpha1.StoreKind
	// retries holds each store's backoff while it is not Ready.
	retries *retryStore
	// tenants keeps a slow namespace's LockStores from taking every
	// worker of the LockStore controller, as inline locks' gate does for
	// locks; nil for ClusterLockStores (the platform's, on their own
	// workers). Set up with the controller's MaxConcurrentReconciles.
	tenants *tenantGate
	// rotations are the controller's records of tenants' password
	// rotations.
	rotations *rotationRecords
}

// NewStoreReconciler returns the reconciler of stores of kind, sharing r's
// clients, pool, Secret cache and replica guard registry.
func NewStoreReconciler(r *DistributedLockReconciler, kind v1alpha1.StoreKind) *StoreReconciler {
	return &StoreReconciler{DistributedLockReconciler: r, kind: kind, retries: newRetryStore(), rotations: newRotationRecords()}
}

// storeObject is a LockStore or ClusterLockStore with what the round needs.
type storeObject struct {
	obj    client.Object
	spec   *storeSpec
	status *v1alpha1.LockStoreStatus
	gen    int64
	// tenants of a ClusterLockStore; nil for a LockStore.
	tenants *v1alpha1.TenantsSpec
}

func (s *StoreReconciler) get(ctx context.Context, nn types.NamespacedName) (storeObject, error) {
	if s.kind == v1alpha1.StoreKindClusterLockStore {
		var cs v1alpha1.ClusterLockStore
		if err := s.kube.Get(ctx, nn, &cs); err != nil {
			return storeObject{}, err
		}
		return storeObject{obj: &cs, spec: clusterStoreSpec(&cs), status: &cs.Status, gen: cs.Generation, tenants: tenantsOrNone(cs.Spec.Tenants)}, nil
	}
	var ls v1alpha1.LockStore
	if err := s.kube.Get(ctx, nn, &ls); err != nil {
		return storeObject{}, err
	}
	return storeObject{obj: &ls, spec: lockStoreSpec(&ls), status: &ls.Status, gen: ls.Generation}, nil
}

// Reconcile observes one store's servers and provisions its tenants, and
// patches its status when that changed it.
func (s *StoreReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if s.tenants != nil {
		done, ok := s.tenants.enter(req.Namespace)
		if !ok {
			tenantDeferred.Inc()
			return reconcile.Result{RequeueAfter: tenantRetry}, nil
		}
		defer done()
	}
	so, err := s.get(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.conditionGauge().forget(req.NamespacedName)
			s.guards.forget(s.requesterOf(req.NamespacedName))
			s.snapshots.forget(s.requesterOf(req.NamespacedName))
			s.retries.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s %s: %w", s.kind, req.NamespacedName, err)
	}
	orig := so.obj.DeepCopyObject().(client.Object)
	rd := &round{
		r:       s.DistributedLockReconciler,
		store:   so.spec,
		session: s.opts.Pool.Session(string(so.spec.uid)),
		now:     s.now().Truncate(time.Second),
	}
	defer rd.session.End()

	pctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
	defer cancel()
	if !so.obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, s.finalize(pctx, rd, so)
	}
	if err := s.ensureFinalizer(ctx, so); err != nil {
		return reconcile.Result{}, err
	}
	s.guards.markSeen(so.spec.requester())
	s.observeStore(pctx, rd)
	s.loadLibrary(pctx, rd, so)
	s.provisionTenants(pctx, rd, so)
	res, err := s.finishStore(ctx, rd, so, orig)
	if err == nil {
		s.readLockKeys(pctx, rd, so)
	}
	return res, err
}

// finishStore is the end of every store reconcile: status computed, patched
// once when it changed, Events after a successful write, next reconcile
// scheduled.
func (s *StoreReconciler) finishStore(ctx context.Context, rd *round, so storeObject, orig client.Object) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	oldStatus := so.status.DeepCopy()
	setStoreStatus(rd, so.status, so.gen)
	if !equality.Semantic.DeepEqual(oldStatus, so.status) {
		if err := s.kube.Status().Patch(ctx, so.obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				log.V(1).Info("status patch raced a newer version; retrying", "error", err.Error())
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching the status of %s: %w", so.spec.requester(), err)
		}
		log.V(1).Info("status updated", "ready", readyStatus(so.status.Conditions))
	}
	s.emitTransitions(so.obj, so.status.Conditions, oldStatus.Conditions, oldStatus.Master, so.status.Master)
	ready := readyStatus(so.status.Conditions) == "True"
	nn := types.NamespacedName{Namespace: so.obj.GetNamespace(), Name: so.obj.GetName()}
	s.conditionGauge().set(nn, so.status.Conditions)
	return reconcile.Result{RequeueAfter: s.requeueAfter(s.retries.get(nn), ready)}, nil
}

// ensureFinalizer adds the ACL cleanup finalizer to a ClusterLockStore with
// isolation ACL, so that its tenants' Redis users are deleted with it.
func (s *StoreReconciler) ensureFinalizer(ctx context.Context, so storeObject) error {
	if so.spec.isolation != v1alpha1.IsolationACL || controllerutil.ContainsFinalizer(so.obj, aclFinalizer) {
		return nil
	}
	patch := client.MergeFrom(so.obj.DeepCopyObject().(client.Object))
	controllerutil.AddFinalizer(so.obj, aclFinalizer)
	if err := s.kube.Patch(ctx, so.obj, patch); err != nil {
		return fmt.Errorf("adding the finalizer to %s: %w", so.spec.requester(), err)
	}
	return nil
}

// ReleaseACLFinalizers removes the ACL cleanup finalizer from every
// ClusterLockStore and returns the names of the stores it took it from. It
// is for an uninstall (the manager's --release-acl-finalizers, the chart's
// post-delete hook): once no manager runs, nothing would remove it, and
// deleting such a store, or its CRD, would wait forever. The stores' tenant
// users stay on Redis; a manager that runs again puts the finalizer back.
func ReleaseACLFinalizers(ctx context.Context, c client.Client) ([]string, error) {
	var list v1alpha1.ClusterLockStoreList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ClusterLockStores: %w", err)
	}
	var released []string
	for i := range list.Items {
		cs := &list.Items[i]
		if !controllerutil.ContainsFinalizer(cs, aclFinalizer) {
			continue
		}
		patch := client.MergeFrom(cs.DeepCopy())
		controllerutil.RemoveFinalizer(cs, aclFinalizer)
		if err := c.Patch(ctx, cs, patch); err != nil && !apierrors.IsNotFound(err) {
			return released, fmt.Errorf("removing the finalizer of ClusterLockStore %s: %w", cs.Name, err)
		}
		released = append(released, cs.Name)
	}
	return released, nil
}

// finalize deletes the store's tenant users on every node that answers,
// then lets the store go. A node that does not answer keeps its users (an
// Event says so): blocking the deletion on a server that may never come
// back would be worse.
func (s *StoreReconciler) finalize(ctx context.Context, rd *round, so storeObject) error {
	if !controllerutil.ContainsFinalizer(so.obj, aclFinalizer) {
		return nil
	}
	var errs []error
	if s.loadCredentials(ctx, rd) && s.resolve(ctx, rd) {
		s.probeEndpoints(ctx, rd)
		errs = append(errs, s.pruneUsers(ctx, rd, nil)...)
	} else {
		errs = append(errs, errors.New(rd.failMessage))
	}
	if len(errs) > 0 {
		s.recorder.Eventf(so.obj, nil, "Warning", v1alpha1.ReasonACLUnavailable, "DeleteTenants",
			"%s deleted; tenant ACL users may be left on nodes that did not answer: %s", so.spec.requester(), capMessage(errors.Join(errs...).Error()))
	}
	patch := client.MergeFrom(so.obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(so.obj, aclFinalizer)
	if err := s.kube.Patch(ctx, so.obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of %s: %w", so.spec.requester(), err)
	}
	s.guards.forget(so.spec.requester())
	s.snapshots.forget(so.spec.requester())
	s.rotations.forget(so.spec.uid)
	return nil
}

func (s *StoreReconciler) requesterOf(nn types.NamespacedName) string {
	st := &storeSpec{kind: string(s.kind), name: nn.Name, namespace: nn.Namespace}
	return st.requester()
}

// retryStore is each store's backoff while it is not Ready.
type retryStore struct {
	mu      sync.Mutex
	backoff map[types.NamespacedName]*backoff.Exponential
}

func newRetryStore() *retryStore {
	return &retryStore{backoff: map[types.NamespacedName]*backoff.Exponential{}}
}

func (r *retryStore) get(nn types.NamespacedName) *backoff.Exponential {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.backoff[nn]
	if b == nil {
		b = &backoff.Exponential{}
		r.backoff[nn] = b
	}
	return b
}

func (r *retryStore) forget(nn types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.backoff, nn)
}

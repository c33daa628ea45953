package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Field indexes on DistributedLocks, so that a change of a Service,
// EndpointSlice or Secret finds the locks that reference it without a scan.
const (
	indexService = "spec.redis.service.name"
	indexSecret  = "spec.redis.secretRefs" //nolint:gosec // G101: a field index name, not a credential
)

// SetupWithManager registers the field indexes and the controller: it
// watches DistributedLocks (spec changes: status writes do not trigger a
// reconcile), the Services and EndpointSlices they resolve through, and the
// metadata of the Secrets they reference.
func (r *DistributedLockReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return r.setup(ctx, mgr, opts, r)
}

// setup is SetupWithManager with the reconciler the controller calls
// (tests wrap r to count reconciles).
func (r *DistributedLockReconciler) setup(ctx context.Context, mgr ctrl.Manager, opts controller.Options, rec reconcile.Reconciler) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.DistributedLock{}, indexService, serviceIndex); err != nil {
		return fmt.Errorf("indexing DistributedLocks by Service: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.DistributedLock{}, indexSecret, secretIndex); err != nil {
		return fmt.Errorf("indexing DistributedLocks by Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.DistributedLock{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.locksForService)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.locksForEndpointSlice)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.locksForSecret),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(opts).
		Named("distributedlock").
		Complete(rec)
}

func serviceIndex(o client.Object) []string {
	dl := o.(*v1alpha1.DistributedLock)
	if s := dl.Spec.Redis.Service; s != nil {
		return []string{s.Name}
	}
	return nil
}

func secretIndex(o client.Object) []string {
	dl := o.(*v1alpha1.DistributedLock)
	var names []string
	add := func(ref *v1alpha1.SecretKeyRef) {
		if ref != nil {
			names = append(names, ref.Name)
		}
	}
	add(dl.Spec.Redis.PasswordSecretRef)
	if s := dl.Spec.Redis.Sentinel; s != nil {
		add(s.PasswordSecretRef)
	}
	if t := dl.Spec.Redis.TLS; t != nil {
		add(t.CASecretRef)
	}
	return names
}

func (r *DistributedLockReconciler) locksForService(ctx context.Context, o client.Object) []reconcile.Request {
	return r.locksBy(ctx, o.GetNamespace(), indexService, o.GetName())
}

func (r *DistributedLockReconciler) locksForEndpointSlice(ctx context.Context, o client.Object) []reconcile.Request {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	return r.locksBy(ctx, o.GetNamespace(), indexService, svc)
}

func (r *DistributedLockReconciler) locksForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	return r.locksBy(ctx, o.GetNamespace(), indexSecret, o.GetName())
}

func (r *DistributedLockReconciler) locksBy(ctx context.Context, ns, index, value string) []reconcile.Request {
	var list v1alpha1.DistributedLockList
	if err := r.kube.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{index: value}); err != nil {
		logf.FromContext(ctx).Error(err, "listing DistributedLocks by index", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, dl := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name}})
	}
	return reqs
}

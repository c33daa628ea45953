/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"slices"

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
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
)

// Field indexes on DistributedLocks, so that a change of a Service,
// EndpointSlice, Secret or store finds the locks that reference it without
// a scan.
const (
	indexService = "spec.redis.service.name"
	indexSecret  = "spec.redis.secretRefs" //nolint:gosec // G101: a field index name, not a credential
	indexStore   = "spec.storeRef"
)

// SetupWithManager registers the field indexes and three controllers: one
// for DistributedLocks, one for LockStores, one for ClusterLockStores.
func (r *DistributedLockReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return r.setup(ctx, mgr, opts, r)
}

// setup is SetupWithManager with the lock reconciler the controller calls
// (tests wrap r to count reconciles).
func (r *DistributedLockReconciler) setup(ctx context.Context, mgr ctrl.Manager, opts controller.Options, rec reconcile.Reconciler) error {
	r.tenants = newTenantGate(r.opts.Clock, opts.MaxConcurrentReconciles)
	idx := mgr.GetFieldIndexer()
	for name, fn := range map[string]client.IndexerFunc{indexService: serviceIndex, indexSecret: secretIndex, indexStore: storeIndex} {
		if err := idx.IndexField(ctx, &v1alpha1.DistributedLock{}, name, fn); err != nil {
			return fmt.Errorf("indexing DistributedLocks by %s: %w", name, err)
		}
	}
	// Lock reconciles follow their store's status (every status write of a
	// store reaches its locks), the Services and Secrets they reference,
	// and namespace labels (a ClusterLockStore's namespaceSelector).
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.DistributedLock{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.locksForService)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.locksForEndpointSlice)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.locksForSecret),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&v1alpha1.LockStore{}, handler.EnqueueRequestsFromMapFunc(r.locksForStore(v1alpha1.StoreKindLockStore))).
		Watches(&v1alpha1.ClusterLockStore{}, handler.EnqueueRequestsFromMapFunc(r.locksForStore(v1alpha1.StoreKindClusterLockStore))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.locksInNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		// A store's batched read enqueues the locks whose key changed.
		WatchesRawSource(source.Channel(r.snapshots.changed, &handler.EnqueueRequestForObject{})).
		// A LockRelease (break-glass) is acted on by its lock's reconcile.
		Watches(&v1alpha1.LockRelease{}, handler.EnqueueRequestsFromMapFunc(lockOfRelease)).
		WithOptions(opts).
		Named("distributedlock").
		Complete(rec)
	if err != nil {
		return err
	}
	for _, kind := range []v1alpha1.StoreKind{v1alpha1.StoreKindLockStore, v1alpha1.StoreKindClusterLockStore} {
		if err := NewStoreReconciler(r, kind).setup(mgr, opts); err != nil {
			return err
		}
	}
	return nil
}

// setup registers the store controller of s.kind: it follows the store's
// spec and annotations (a rotation request), the locks that use it (its
// tenants), namespace labels, the Secrets it reads or wrote, and Services.
func (s *StoreReconciler) setup(mgr ctrl.Manager, opts controller.Options) error {
	var obj client.Object = &v1alpha1.LockStore{}
	if s.kind == v1alpha1.StoreKindClusterLockStore {
		obj = &v1alpha1.ClusterLockStore{}
	} else {
		s.tenants = newTenantGate(s.opts.Clock, opts.MaxConcurrentReconciles)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A lock's creation, deletion or spec change (not its status
		// writes) changes the store's tenants and the keys it reads.
		Watches(&v1alpha1.DistributedLock{}, handler.EnqueueRequestsFromMapFunc(s.storeOfLock), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(s.storesForService)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(s.storesForEndpointSlice)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(s.storesForSecret), builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}))
	if s.kind == v1alpha1.StoreKindClusterLockStore {
		// Namespace labels decide a ClusterLockStore's tenants.
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(s.storesWhere(func(*storeSpec) bool { return true })),
			builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b.
		WithOptions(opts).
		Named(string(s.kind)).
		Complete(s)
}

func serviceIndex(o client.Object) []string {
	dl := o.(*v1alpha1.DistributedLock)
	if s := dl.Spec.Redis.Service; s != nil {
		return []string{s.Name}
	}
	return nil
}

// secretIndex names the Secrets a lock reads: those its inline spec
// references, or the credentials Secret its store writes for it.
func secretIndex(o client.Object) []string {
	dl := o.(*v1alpha1.DistributedLock)
	if dl.Spec.StoreRef != nil {
		return []string{podrbac.LockSecretName(dl)}
	}
	var names []string
	for _, ref := range inlineStore(dl).secretRefs() {
		if !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	return names
}

// storeIndex is "<kind>/<name>" of the lock's store.
func storeIndex(o client.Object) []string {
	dl := o.(*v1alpha1.DistributedLock)
	if ref := dl.Spec.StoreRef; ref != nil {
		return []string{string(ref.Kind) + "/" + ref.Name}
	}
	return nil
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

// locksForStore maps a store to the locks on it (a LockStore's in its
// namespace, a ClusterLockStore's everywhere).
func (r *DistributedLockReconciler) locksForStore(kind v1alpha1.StoreKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.locksBy(ctx, o.GetNamespace(), indexStore, string(kind)+"/"+o.GetName())
	}
}

// locksInNamespace maps a namespace to its locks on ClusterLockStores.
func (r *DistributedLockReconciler) locksInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.DistributedLockList
	if err := r.kube.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		logf.FromContext(ctx).Error(err, "listing DistributedLocks", "namespace", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for _, dl := range list.Items {
		if ref := dl.Spec.StoreRef; ref != nil && ref.Kind == v1alpha1.StoreKindClusterLockStore {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name}})
		}
	}
	return reqs
}

// locksBy lists the locks whose index has value, in namespace ns ("" for
// every namespace).
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

// storeOfLock maps a lock to its store, when the store is of s.kind.
func (s *StoreReconciler) storeOfLock(_ context.Context, o client.Object) []reconcile.Request {
	dl := o.(*v1alpha1.DistributedLock)
	ref := dl.Spec.StoreRef
	if ref == nil || ref.Kind != s.kind {
		return nil
	}
	nn := types.NamespacedName{Name: ref.Name}
	if s.kind == v1alpha1.StoreKindLockStore {
		nn.Namespace = dl.Namespace
	}
	return []reconcile.Request{{NamespacedName: nn}}
}

// storesWhere maps an object to the stores of s.kind that match: stores
// are few, and listing them from the cache costs no API call.
func (s *StoreReconciler) storesWhere(match func(*storeSpec) bool) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var specs []*storeSpec
		if s.kind == v1alpha1.StoreKindClusterLockStore {
			var list v1alpha1.ClusterLockStoreList
			if err := s.kube.List(ctx, &list); err != nil {
				logf.FromContext(ctx).Error(err, "listing ClusterLockStores")
				return nil
			}
			for i := range list.Items {
				specs = append(specs, clusterStoreSpec(&list.Items[i]))
			}
		} else {
			var list v1alpha1.LockStoreList
			if err := s.kube.List(ctx, &list); err != nil {
				logf.FromContext(ctx).Error(err, "listing LockStores")
				return nil
			}
			for i := range list.Items {
				specs = append(specs, lockStoreSpec(&list.Items[i]))
			}
		}
		var reqs []reconcile.Request
		for _, st := range specs {
			if match(st) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: st.namespace, Name: st.name}})
			}
		}
		return reqs
	}
}

// storesForSecret maps a Secret to the stores that read it (their spec
// references it) or wrote it (a tenant's credentials Secret, labelled with
// the store's UID): not every Secret change reconciles every store.
//
// A Secret a lock on the store names (spec.credentialsSecretName) maps to
// the store too: a foreign Secret of that name deleted, the store writes
// its own at once.
func (s *StoreReconciler) storesForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	nn := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	uid := types.UID(o.GetLabels()[v1alpha1.LabelStoreUID])
	named := map[string]bool{}
	var locks v1alpha1.DistributedLockList
	if err := s.kube.List(ctx, &locks, client.InNamespace(nn.Namespace), client.MatchingFields{indexSecret: nn.Name}); err != nil {
		logf.FromContext(ctx).Error(err, "listing DistributedLocks by index", "index", indexSecret, "value", nn.Name)
	}
	for i := range locks.Items {
		if ref := locks.Items[i].Spec.StoreRef; ref != nil && ref.Kind == s.kind {
			named[ref.Name] = true
		}
	}
	return s.storesWhere(func(st *storeSpec) bool {
		return uid != "" && st.uid == uid || slices.Contains(st.secretRefs(), nn) || named[st.name] && (st.namespace == "" || st.namespace == nn.Namespace)
	})(ctx, o)
}

// storesForService maps a Service to the stores that resolve through it.
func (s *StoreReconciler) storesForService(ctx context.Context, o client.Object) []reconcile.Request {
	return s.storesOfService(ctx, o, o.GetName())
}

// storesForEndpointSlice maps an EndpointSlice to the stores that resolve
// through its Service.
func (s *StoreReconciler) storesForEndpointSlice(ctx context.Context, o client.Object) []reconcile.Request {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	return s.storesOfService(ctx, o, svc)
}

func (s *StoreReconciler) storesOfService(ctx context.Context, o client.Object, service string) []reconcile.Request {
	return s.storesWhere(func(st *storeSpec) bool {
		ref := st.redis.Service
		return ref != nil && ref.Name == service && st.refNamespace(ref.Namespace) == o.GetNamespace()
	})(ctx, o)
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
)

// kindInline names the anonymous store of an inline DistributedLock.
const kindInline = "DistributedLock"

// storeSpec is a store the way the reconcile phases see it, whichever
// resource it comes from: a ClusterLockStore, a LockStore, or an inline
// DistributedLock (an anonymous store of one lock). One code path serves
// all three; only where Secrets are read and who may merge replica
// settings depends on the kind.
type storeSpec struct {
	kind string // v1alpha1.StoreKind* or kindInline
	name string // the resource's name
	uid  types.UID
	// namespace is where the store's Secret and Service references live;
	// "" for a ClusterLockStore, whose references name their namespace.
	namespace string

	redis          *v1alpha1.RedisSpec
	controllerAuth v1alpha1.RedisAuth
	clientAuth     v1alpha1.RedisAuth
	safety         *v1alpha1.SafetySpec
	// isolation is the ClusterLockStore's tenants.isolation, "" otherwise.
	isolation v1alpha1.Isolation

	// owner is the resource Events go to.
	owner client.Object
}

// requester names the store in the replica guard registry and in logs.
func (s *storeSpec) requester() string {
	if s.namespace == "" {
		return s.kind + "/" + s.name
	}
	return s.kind + "/" + s.namespace + "/" + s.name
}

// isStore is true for LockStores and ClusterLockStores (not inline locks):
// their replica settings win over inline locks' on the same servers.
func (s *storeSpec) isStore() bool { return s.kind != kindInline }

// refNamespace is the namespace a reference of the store points into.
func (s *storeSpec) refNamespace(refNS string) string {
	if s.namespace != "" {
		return s.namespace
	}
	return refNS
}

// secretRefs are the Secrets the store's spec references (passwords, CA
// bundle, client certificate), with their namespaces resolved.
func (s *storeSpec) secretRefs() []types.NamespacedName {
	var refs []types.NamespacedName
	add := func(ns, name string) {
		refs = append(refs, types.NamespacedName{Namespace: s.refNamespace(ns), Name: name})
	}
	for _, a := range []v1alpha1.RedisAuth{s.controllerAuth, s.clientAuth} {
		if ref := a.PasswordSecretRef; ref != nil {
			add(ref.Namespace, ref.Name)
		}
	}
	if sn := s.redis.Sentinel; sn != nil && sn.PasswordSecretRef != nil {
		add(sn.PasswordSecretRef.Namespace, sn.PasswordSecretRef.Name)
	}
	if t := s.redis.TLS; t != nil {
		if ref := t.CASecretRef; ref != nil {
			add(ref.Namespace, ref.Name)
		}
		if ref := t.ClientCertSecretRef; ref != nil {
			add(ref.Namespace, ref.Name)
		}
	}
	return refs
}

// inlineStore is the anonymous store of an inline lock: the pods'
// credentials are spec.redis.username/passwordSecretRef, and the
// controller's are spec.controllerAuth when set, else the pods'.
func inlineStore(dl *v1alpha1.DistributedLock) *storeSpec {
	client := v1alpha1.RedisAuth{Username: dl.Spec.Redis.Username, PasswordSecretRef: dl.Spec.Redis.PasswordSecretRef}
	ctrlAuth := client
	if a := dl.Spec.ControllerAuth; a != nil {
		ctrlAuth = *a
	}
	return &storeSpec{
		kind: kindInline, name: dl.Name, uid: dl.UID, namespace: dl.Namespace,
		redis: &dl.Spec.Redis, controllerAuth: ctrlAuth, clientAuth: client,
		safety: dl.Spec.Safety, owner: dl,
	}
}

func lockStoreSpec(ls *v1alpha1.LockStore) *storeSpec {
	return &storeSpec{
		kind: string(v1alpha1.StoreKindLockStore), name: ls.Name, uid: ls.UID, namespace: ls.Namespace,
		redis: &ls.Spec.Redis, controllerAuth: deref(ls.Spec.ControllerAuth), clientAuth: deref(ls.Spec.ClientAuth),
		safety: ls.Spec.Safety, owner: ls,
	}
}

func clusterStoreSpec(cs *v1alpha1.ClusterLockStore) *storeSpec {
	return &storeSpec{
		kind: string(v1alpha1.StoreKindClusterLockStore), name: cs.Name, uid: cs.UID,
		redis: &cs.Spec.Redis, controllerAuth: deref(cs.Spec.ControllerAuth), clientAuth: deref(cs.Spec.ClientAuth),
		safety: cs.Spec.Safety, isolation: cs.Spec.IsolationOrDefault(), owner: cs,
	}
}

func deref(a *v1alpha1.RedisAuth) v1alpha1.RedisAuth {
	if a == nil {
		return v1alpha1.RedisAuth{}
	}
	return *a
}

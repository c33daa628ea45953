/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
)

// holderPod is what a lookup found for one holder identity: the pod it
// names in the lock's namespace and that pod's node, both empty when it
// names none.
type holderPod struct {
	identity  string
	pod, node string
}

// fillHolderPod sets status.holder.pod and .node: the pod of the lock's
// namespace that the holder's identity names ("<pod>:<pid>", the library's
// default, or "<pod>"), and its node.
//
// A Pod informer would cache every pod of every watched namespace to serve
// a few lookups; a metadata-only one would not even have the node. The pod
// is read instead with one uncached GET, and only when the holder's
// identity differs from the one looked up last for this lock (a standby
// taking over, not every reconcile of a lock that stays held), and only in
// a round whose holder change may be written now (the status cadence):
// a busy lock whose holder changes every round costs at most one GET per
// probe interval, like its status writes. A failed GET (other than
// NotFound) is retried at the next such round; meanwhile the holder keeps
// what it had.
func (r *DistributedLockReconciler) fillHolderPod(ctx context.Context, rd *round, st *lockState, prev *v1alpha1.LockHolder) {
	h := rd.dl.Status.Holder
	if h == nil {
		return
	}
	if found, ok := st.holderPod(h.Identity); ok {
		h.Pod, h.Node = found.pod, found.node
		return
	}
	if prev != nil && prev.Identity == h.Identity && prev.Pod != "" {
		// Looked up by an earlier run of this controller: status keeps it.
		st.setHolderPod(holderPod{identity: h.Identity, pod: prev.Pod, node: prev.Node})
		return
	}
	name, ok := podNameOf(h.Identity)
	if !ok {
		h.Pod, h.Node = "", ""
		st.setHolderPod(holderPod{identity: h.Identity})
		return
	}
	if !st.writeDue(r.now(), r.opts.ProbeInterval) {
		return // this round's holder change waits for the cadence; so does the lookup
	}
	var pod corev1.Pod
	switch err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: rd.dl.Namespace, Name: name}, &pod); {
	case apierrors.IsNotFound(err):
		h.Pod, h.Node = "", ""
		st.setHolderPod(holderPod{identity: h.Identity})
	case err != nil:
		logf.FromContext(ctx).V(1).Info("cannot read the holder's pod; retrying at the next status write", "pod", name, "error", err.Error())
	default:
		found := holderPod{identity: h.Identity, pod: pod.Name, node: pod.Spec.NodeName}
		h.Pod, h.Node = found.pod, found.node
		st.setHolderPod(found)
	}
}

// podNameOf is the pod name an identity names: the identity without a
// trailing ":<pid>" (the library's default identity), when that is a valid
// pod name.
func podNameOf(identity string) (string, bool) {
	name := identity
	if i := strings.LastIndexByte(identity, ':'); i >= 0 && isDigits(identity[i+1:]) {
		name = identity[:i]
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", false
	}
	return name, true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// holderPod returns what the last lookup found, when it was for identity.
func (st *lockState) holderPod(identity string) (holderPod, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pod, st.pod.identity == identity && identity != ""
}

func (st *lockState) setHolderPod(p holderPod) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pod = p
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
)

// Break-glass (docs/breakglass.md): a LockRelease asks the controller to
// revoke a lock's holder or force its key free. The lock's reconcile acts
// on its pending LockReleases once it has found the lock's master, writes
// each one's status once, and records an Event on the lock naming the
// requester, the holder and its fence, and the outcome. Finished
// LockReleases are kept as a record.
//
// +kubebuilder:rbac:groups=redlease.io,resources=lockreleases,verbs=get;list;watch
// +kubebuilder:rbac:groups=redlease.io,resources=lockreleases/status,verbs=get;patch

// Event reasons on the DistributedLock.
const (
	reasonLockReleaseRefused = "LockReleaseRefused"
)

// releasePending is how soon a lock with a LockRelease still pending is
// reconciled again.
const releasePending = 2 * time.Second

// lockOfRelease maps a LockRelease to the lock it names.
func lockOfRelease(_ context.Context, o client.Object) []reconcile.Request {
	lr, ok := o.(*v1alpha1.LockRelease)
	if !ok || releaseFinished(lr) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: lr.Namespace, Name: lr.Spec.LockName}}}
}

// releaseFinished: the controller acted on lr, or refused it for good.
func releaseFinished(lr *v1alpha1.LockRelease) bool {
	c := meta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete)
	return c != nil && c.Status != metav1.ConditionUnknown
}

// pendingReleases are the unfinished LockReleases of lock nn, oldest first.
func (r *DistributedLockReconciler) pendingReleases(ctx context.Context, nn types.NamespacedName) ([]v1alpha1.LockRelease, error) {
	var list v1alpha1.LockReleaseList
	if err := r.kube.List(ctx, &list, client.InNamespace(nn.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the LockReleases of %s: %w", nn.Namespace, err)
	}
	out := list.Items[:0]
	for _, lr := range list.Items {
		if lr.Spec.LockName == nn.Name && !releaseFinished(&lr) {
			out = append(out, lr)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.LockRelease) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out, nil
}

// releasesOfMissingLock refuses the pending LockReleases of a lock that
// does not exist (checked on the API server, not the cache, which may not
// have a lock just created yet).
func (r *DistributedLockReconciler) releasesOfMissingLock(ctx context.Context, nn types.NamespacedName) error {
	pending, err := r.pendingReleases(ctx, nn)
	if err != nil || len(pending) == 0 {
		return err
	}
	var dl v1alpha1.DistributedLock
	if err := r.apiReader.Get(ctx, nn, &dl); !apierrors.IsNotFound(err) {
		return err // exists after all (its reconcile acts), or unknown: retried
	}
	for i := range pending {
		lr := &pending[i]
		orig := lr.DeepCopy()
		finishRelease(lr, metav1.ConditionFalse, v1alpha1.ReasonLockNotFound,
			fmt.Sprintf("DistributedLock %s does not exist in namespace %s", nn.Name, nn.Namespace))
		if err := r.patchRelease(ctx, lr, orig); err != nil {
			return err
		}
	}
	return nil
}

// breakGlass acts on the pending LockReleases of the round's lock, after
// the round read its holder. It reports whether any is still pending.
func (r *DistributedLockReconciler) breakGlass(ctx context.Context, rd *round) bool {
	log := logf.FromContext(ctx)
	pending, err := r.pendingReleases(ctx, types.NamespacedName{Namespace: rd.dl.Namespace, Name: rd.dl.Name})
	if err != nil {
		log.Info("cannot list LockReleases", "error", err.Error())
		return true
	}
	waiting := false
	for i := range pending {
		lr := &pending[i]
		orig := lr.DeepCopy()
		r.release(ctx, rd, lr)
		if err := r.patchRelease(ctx, lr, orig); err != nil {
			log.Info("cannot write a LockRelease's status", "lockRelease", lr.Name, "error", err.Error())
			waiting = true
			continue
		}
		if !releaseFinished(lr) {
			waiting = true
			continue
		}
		r.releaseEvent(rd, lr)
	}
	return waiting
}

// release revokes or forces the round's lock for lr and writes the
// outcome in lr's status.
func (r *DistributedLockReconciler) release(ctx context.Context, rd *round, lr *v1alpha1.LockRelease) {
	mode := lr.Spec.ModeOrDefault()
	switch {
	case rd.store != nil && rd.store.redis.Mode == v1alpha1.RedisModeRedlock:
		finishRelease(lr, metav1.ConditionFalse, v1alpha1.ReasonUnsupported, "Redlock locks have no break-glass yet: each node would need its own revoke")
		return
	case rd.dl.Spec.Semaphore():
		finishRelease(lr, metav1.ConditionFalse, v1alpha1.ReasonRefused, protocol.RefusedMessage(protocol.RefusedSemaphore))
		return
	}
	sources := holderSources(rd)
	if len(sources) == 0 || sources[0].client == nil {
		why := rd.failMessage
		if why == "" {
			why = "the lock's master is not known yet"
		}
		finishRelease(lr, metav1.ConditionUnknown, v1alpha1.ReasonPending, "waiting for the lock's master: "+why)
		return
	}
	args := protocol.BreakGlassArgs{By: lr.Spec.RequestedBy, Sharded: rd.store.redis.Mode == v1alpha1.RedisModeCluster}
	if f := lr.Spec.Fence; f != nil {
		args.Fence, args.FenceSet = uint64(max(*f, 0)), true
	}
	run := protocol.Scripts(sources[0].client)
	var (
		b   protocol.BreakGlass
		err error
	)
	if mode == v1alpha1.ReleaseModeForce {
		args.Floor = uint64(max(rd.highWater, rd.dl.Status.FenceHighWater, 0))
		b, err = protocol.Force(ctx, run, rd.key, args)
	} else {
		b, err = protocol.Revoke(ctx, run, rd.key, args)
	}
	if err != nil {
		finishRelease(lr, metav1.ConditionUnknown, v1alpha1.ReasonPending, "the lock's server refused the request; retrying: "+err.Error())
		return
	}
	lr.Status.Holder = truncate(b.Identity, maxIdentity)
	lr.Status.Fence = clampInt64(b.Fence)
	lr.Status.RaisedFence = clampInt64(b.Raised)
	switch {
	case !b.Done:
		finishRelease(lr, metav1.ConditionFalse, v1alpha1.ReasonRefused, protocol.RefusedMessage(b.Refused))
	case mode == v1alpha1.ReleaseModeForce:
		finishRelease(lr, metav1.ConditionTrue, v1alpha1.ReasonForced, fmt.Sprintf(
			"forced %s free: holder %s (fence %d) lost the lock at once; the fence counter was raised to %d first, so fenced stores refuse its writes once the next holder has written",
			rd.key, holderName(b.Identity), b.Fence, b.Raised))
	default:
		until := r.now().Add(b.TTL)
		lr.Status.GrantsResumeAt = &metav1.Time{Time: until.Truncate(time.Second).Add(time.Second)}
		finishRelease(lr, metav1.ConditionTrue, v1alpha1.ReasonRevoked, fmt.Sprintf(
			"revoked holder %s (fence %d) of %s: its next renewal is refused; nothing is granted before its key expires in %v (at %s)",
			holderName(b.Identity), b.Fence, rd.key, b.TTL.Round(time.Millisecond), lr.Status.GrantsResumeAt.UTC().Format(time.RFC3339)))
	}
}

// releaseEvent records lr's outcome on its lock, naming the requester.
func (r *DistributedLockReconciler) releaseEvent(rd *round, lr *v1alpha1.LockRelease) {
	c := meta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete)
	reason, action := v1alpha1.ReasonLockReleased, string(lr.Spec.ModeOrDefault())
	if c.Status != metav1.ConditionTrue {
		reason = reasonLockReleaseRefused
	}
	r.recorder.Eventf(rd.dl, lr, corev1.EventTypeWarning, reason, action, "LockRelease %s requested by %s: %s: %s",
		lr.Name, lr.Spec.RequestedBy, c.Reason, c.Message)
}

// finishRelease sets lr's Complete condition and outcome.
func finishRelease(lr *v1alpha1.LockRelease, status metav1.ConditionStatus, reason, message string) {
	message = capMessage(message)
	lr.Status.Outcome = truncate(message, 1024)
	meta.SetStatusCondition(&lr.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionComplete, Status: status, Reason: reason, Message: message, ObservedGeneration: lr.Generation,
	})
}

func (r *DistributedLockReconciler) patchRelease(ctx context.Context, lr, orig *v1alpha1.LockRelease) error {
	if err := r.kube.Status().Patch(ctx, lr, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching the status of LockRelease %s/%s: %w", lr.Namespace, lr.Name, err)
	}
	return nil
}

// holderName is identity, or what stands for a value this library did not
// write.
func holderName(identity string) string {
	if identity == "" {
		return unrecognizedHolder
	}
	return identity
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

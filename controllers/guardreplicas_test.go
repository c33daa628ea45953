/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestGuardReachesReplicas: the guard the controller keeps on a master is
// set on its replicas too, so a replica promoted by a failover refuses
// unreplicated writes from its first one, before any reconcile; raising
// and then lowering the lock's request moves master and replicas with it
// (the controller lowers what it set itself).
func TestGuardReachesReplicas(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	group := redistest.StartReplicated(t, 2)
	h.create("guarded", replicatedSpec(1, 7*time.Second, group.Master.Addr()))
	h.waitFor("guarded", "Ready with the guard applied", isReady)
	ctx := h.ctx()
	settledOn := func(want string, servers ...*redistest.Server) {
		t.Helper()
		h.eventually("min-replicas-to-write "+want+" everywhere", func() error {
			for _, s := range servers {
				if tw, lag, err := replicaSettings(ctx, s.Client(t)); err != nil || tw != want || lag != "7" {
					return fmt.Errorf("%s: min-replicas-to-write %q, min-replicas-max-lag %q (%w)", s.Addr(), tw, lag, err)
				}
			}
			return nil
		})
	}
	all := append([]*redistest.Server{group.Master}, group.Replicas...)
	settledOn("1", all...)

	for _, n := range []int32{2, 1} {
		// The controller's status writes race the update: read again on a
		// conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var dl v1alpha1.DistributedLock
			if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "guarded"}, &dl); err != nil {
				return err
			}
			dl.Spec.Safety.MinReplicasToWrite = n
			return h.c.Update(ctx, &dl)
		})
		if err != nil {
			t.Fatal(err)
		}
		settledOn(fmt.Sprint(n), all...)
	}

	// A failover: the promoted replica is guarded already.
	promoted := group.Replicas[0].Client(t)
	if err := promoted.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if tw, _, err := replicaSettings(ctx, promoted); err != nil || tw != "1" {
		t.Fatalf("the promoted replica has min-replicas-to-write %q (%v): unguarded until the next reconcile", tw, err)
	}
}

// TestGuardNeverLowersSettingsItDidNotSet: a master whose owner configured
// a stricter guard (2 replicas within 5s) than a lock asks for (1 within
// 10s) keeps it: the controller raises settings, and lowers only what it
// set itself. Before, it lowered the master to the lock's request once it
// had seen every lock.
func TestGuardNeverLowersSettingsItDidNotSet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	group := redistest.StartReplicated(t, 2)
	ctx := h.ctx()
	admin := group.Master.Client(t)
	for k, v := range map[string]string{"min-replicas-to-write": "2", "min-replicas-max-lag": "5"} {
		if err := admin.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	h.create("lenient", replicatedSpec(1, 10*time.Second, group.Master.Addr()))
	h.waitFor("lenient", "Ready, guarded", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
	})
	h.consistently("the owner's stricter guard kept", 4*time.Second, func() error {
		if tw, lag, err := replicaSettings(ctx, admin); err != nil || tw != "2" || lag != "5" {
			return fmt.Errorf("master has min-replicas-to-write %q, min-replicas-max-lag %q (%w); want the owner's 2 and 5", tw, lag, err)
		}
		return nil
	})
}

// TestARestartedControllerLowersNoGuardItSetBefore: the controller
// remembers in memory what it set, so after a restart its predecessor's
// settings are not its own. Two locks ask one master for 2 and 1 replicas;
// the first controller applies the stricter 2 and stops. Whichever lock the
// restarted controller reconciles first, the master keeps 2 while the
// strict lock exists, and keeps it after that lock is deleted too: what a
// controller did not set itself, it never lowers (docs/operator.md: lower
// it by hand).
func TestARestartedControllerLowersNoGuardItSetBefore(t *testing.T) {
	t.Parallel()
	const probeInterval = time.Second
	h := newHarness(t, harnessOptions{probeInterval: probeInterval})
	group := redistest.StartReplicated(t, 2)
	admin := group.Master.Client(t)
	h.create("strict", replicatedSpec(2, 7*time.Second, group.Master.Addr()))
	h.create("lenient", replicatedSpec(1, 7*time.Second, group.Master.Addr()))
	conflict := func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonSettingsConflict)
	}
	for _, name := range []string{"strict", "lenient"} {
		h.waitFor(name, "SettingsConflict", conflict)
	}
	h.eventually("the stricter guard applied", masterKeeps(h, admin, "2"))

	h.stop()
	if t.Failed() {
		t.FailNow() // the first manager may still run: never two at once
	}
	restarted := newHarness(t, harnessOptions{probeInterval: probeInterval, after: h})
	restarted.consistently("the strict lock's guard kept across the restart", 4*probeInterval, masterKeeps(restarted, admin, "2"))
	for _, name := range []string{"strict", "lenient"} {
		if restarted.counter(name).Load() == 0 {
			t.Fatalf("the restarted controller never reconciled %s", name)
		}
	}

	if err := restarted.c.Delete(restarted.ctx(), &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: restarted.ns, Name: "strict"}}); err != nil {
		t.Fatal(err)
	}
	restarted.waitFor("lenient", "no conflict left", func(dl *v1alpha1.DistributedLock) error {
		if conflict(dl) == nil {
			return errNotYet
		}
		return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, "")
	})
	restarted.consistently("the predecessor's guard kept", 3*probeInterval, masterKeeps(restarted, admin, "2"))
}

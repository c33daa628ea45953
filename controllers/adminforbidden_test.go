/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestAdminForbidden runs the controller against servers that forbid
// administration as managed services do: a master and a replica with
// CONFIG, ACL, DEBUG and MONITOR renamed away (redistest.WithAdminForbidden).
// What needs them is reported, each with what to do, and an Event:
//
//   - a lock asking for the replica guard: ReplicationGuarded and Ready
//     False ConfigUnavailable (it asked for a guard nobody can check);
//   - a lock without the guard (waitForReplicas only, which INFO
//     answers): Ready, Preflight Unknown ConfigUnavailable (persistence
//     cannot be read);
//   - a ClusterLockStore with isolation ACL: TenantsProvisioned False
//     ACLUnavailable, and its lock waits (CredentialsNotProvisioned);
//   - a ClusterLockStore with isolation None: Ready, and a pod takes and
//     releases its lock with the credentials the store published.
//
// None of it loops: over 6 s each lock is reconciled a bounded number of
// times, and the store neither rewrites its status nor repeats its Event.
func TestAdminForbidden(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1, probeInterval: time.Second})
	group := redistest.StartReplicated(t, 1, redistest.WithAdminForbidden())
	addrs := []string{group.Master.Addr(), group.Replicas[0].Addr()}
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")

	h.create("guarded", replicatedSpec(1, 10*time.Second, addrs...))
	waits := replicatedSpec(0, 10*time.Second, addrs...)
	waits.Safety.ManageReplicaSettings = false
	waits.Safety.WaitForReplicas = 1
	h.create("waits", waits)

	redis := v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: addrs}
	isolated := h.createClusterStore("isolated", v1alpha1.ClusterLockStoreSpec{Redis: redis, Tenants: tenantSelector()})
	shared := h.createClusterStore("shared", v1alpha1.ClusterLockStoreSpec{Redis: redis, Tenants: &v1alpha1.TenantsSpec{
		NamespaceSelector: tenantSelector().NamespaceSelector, Isolation: v1alpha1.IsolationNone,
	}})
	h.createIn(ns, "on-isolated", onStore(v1alpha1.StoreKindClusterLockStore, isolated.Name, "job"))
	h.createIn(ns, "on-shared", onStore(v1alpha1.StoreKindClusterLockStore, shared.Name, "job"))

	// The guard cannot be read: Ready False, saying what to do.
	dl := h.waitFor("guarded", "ConfigUnavailable", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionFalse, v1alpha1.ReasonConfigUnavailable); err != nil {
			return err
		}
		return notReadyBecause(v1alpha1.ReasonConfigUnavailable)(dl)
	})
	saysWhatToDo(t, "guarded: ReplicationGuarded", condition(dl, v1alpha1.ConditionReplicationGuarded).Message, "minReplicasToWrite", "CONFIG")
	h.waitEvent("guarded", corev1.EventTypeWarning, v1alpha1.ReasonConfigUnavailable)

	// Without the guard the lock is Ready; preflight says what it could
	// not read.
	dl = h.waitFor("waits", "Ready, Preflight Unknown", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionPreflight, metav1.ConditionUnknown, v1alpha1.ReasonConfigUnavailable)
	})
	saysWhatToDo(t, "waits: Preflight", condition(dl, v1alpha1.ConditionPreflight).Message, "persistence", "provider")
	h.waitEvent("waits", corev1.EventTypeWarning, v1alpha1.ReasonConfigUnavailable)

	// Isolation ACL cannot be provisioned; the store is Ready otherwise.
	h.waitStore(isolated, "TenantsProvisioned False ACLUnavailable", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		if err := storeReady(st, gen); err != nil {
			return err
		}
		return storeCondition(st, gen, v1alpha1.ConditionTenantsProvisioned, metav1.ConditionFalse, v1alpha1.ReasonACLUnavailable)
	})
	st, _ := storeStatus(isolated)
	saysWhatToDo(t, "isolated: TenantsProvisioned", findCondition(st.Conditions, v1alpha1.ConditionTenantsProvisioned).Message, "isolation: None", "controllerAuth")
	h.eventually("a Warning ACLUnavailable Event on the store", func() error {
		return hasEvent(h.eventsRegarding("default", "ClusterLockStore", isolated.Name), corev1.EventTypeWarning, v1alpha1.ReasonACLUnavailable)
	})
	h.waitForIn(ns, "on-isolated", "waiting for its credentials", notReadyBecause(v1alpha1.ReasonCredentialsNotProvisioned))

	// Isolation None: pods' locks work.
	dl = h.waitForIn(ns, "on-shared", "Ready", readyOn("job", v1alpha1.RedisModeReplicated, "redlease-"+shared.Name))
	ctx := h.ctx()
	locker := newLocker(t, h.podClient(dl), lock.WithIdentity("managed-pod"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatalf("acquiring job on a server without CONFIG and ACL: %v", err)
	}
	h.waitForIn(ns, "on-shared", "the holder observed", holderIs("managed-pod", lease.Fence()))
	if err := lease.Release(ctx); err != nil {
		t.Errorf("releasing job: %v", err)
	}

	// No loop. At 1 s per probe (backoff starting at 1 s) 6 s allow about
	// 6 reconciles of a lock; a loop would do thousands.
	counters := map[string]int64{}
	for _, name := range []string{"guarded", "waits"} {
		counters[name] = h.counter(name).Load()
	}
	before, beforeStatus := storeVersion(h, isolated)
	events := eventCount(h.eventsRegarding("default", "ClusterLockStore", isolated.Name))
	time.Sleep(6 * time.Second) // the measurement window, not an assertion on timing
	for name, n0 := range counters {
		n := h.counter(name).Load() - n0
		t.Logf("%s: %d reconciles in 6s", name, n)
		if n > 15 {
			t.Errorf("%s: %d reconciles in 6s: a hot loop", name, n)
		}
		if n < 2 {
			t.Errorf("%s: %d reconciles in 6s: not requeued", name, n)
		}
	}
	if after, afterStatus := storeVersion(h, isolated); after != before {
		t.Errorf("the isolated store's status changed while nothing did (resourceVersion %s, then %s):\n%s\nthen\n%s", before, after, beforeStatus, afterStatus)
	}
	if n := eventCount(h.eventsRegarding("default", "ClusterLockStore", isolated.Name)); n != events {
		t.Errorf("the isolated store's Events went from %d to %d while nothing changed", events, n)
	}
}

// saysWhatToDo fails unless msg names each of words.
func saysWhatToDo(t *testing.T, what, msg string, words ...string) {
	t.Helper()
	t.Logf("%s: %s", what, msg)
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message %q does not mention %q", what, msg, w)
		}
	}
}

func findCondition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// storeVersion is the resourceVersion of the store now, and its status.
func storeVersion(h *harness, obj client.Object) (string, string) {
	h.t.Helper()
	if err := h.c.Get(h.ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
		h.t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	st, _ := storeStatus(obj)
	y, _ := yaml.Marshal(st)
	return obj.GetResourceVersion(), string(y)
}

// hasEvent is nil when events hold one of type and reason.
func hasEvent(events []eventsv1.Event, eventType, reason string) error {
	var seen []string
	for _, e := range events {
		if e.Type == eventType && e.Reason == reason {
			return nil
		}
		seen = append(seen, e.Type+"/"+e.Reason)
	}
	return fmt.Errorf("no %s %s Event; seen %v", eventType, reason, seen)
}

// eventCount is how many times events were recorded, series included.
func eventCount(events []eventsv1.Event) int {
	n := 0
	for _, e := range events {
		n += occurrences(e)
	}
	return n
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestControllerUser runs the controller as the user the docs tell people
// to create: the ACL SETUSER line redisacl.ControllerSetUser renders (the
// line README and docs/operator.md carry, test/docs), run on every node.
// With the guard and isolation modes, a ClusterLockStore that asks for
// both is Ready: the guard applied (CONFIG), a tenant user provisioned
// (ACL), preflight read (CONFIG GET save) and a pod's lease observed (the
// read script) with its key's epoch record written (the failover
// quarantine). With the line of neither mode, on another pair of
// servers, what is missing shows as the conditions that name it:
// ReplicationGuarded ConfigUnavailable, TenantsProvisioned ACLUnavailable,
// Preflight Unknown ConfigUnavailable.
func TestControllerUser(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	full := redistest.StartReplicated(t, 1)
	bare := redistest.StartReplicated(t, 1)
	const password = "controller-s3cret"
	ctx := h.ctx()
	for group, modes := range map[*redistest.Replicated]redisacl.ControllerModes{
		full: {Guard: true, Isolation: true, Functions: true},
		bare: {},
	} {
		line, err := redisacl.ControllerSetUser(password, modes)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append([]*redistest.Server{group.Master}, group.Replicas...) {
			words := strings.Fields(line)
			args := make([]any, len(words))
			for i, w := range words {
				args[i] = w
			}
			if err := s.Client(t).Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%s on %s: %v", line, s, err)
			}
		}
	}
	h.createSecret("controller", map[string]string{"password": password})
	store := func(g *redistest.Replicated) v1alpha1.ClusterLockStoreSpec {
		return v1alpha1.ClusterLockStoreSpec{
			Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{g.Master.Addr(), g.Replicas[0].Addr()}},
			ControllerAuth: &v1alpha1.RedisAuth{
				Username:          redisacl.ControllerUser,
				PasswordSecretRef: &v1alpha1.SecretKeyRef{Namespace: h.ns, Name: "controller", Key: "password"},
			},
			Safety:  &v1alpha1.SafetySpec{MinReplicasToWrite: 1, MinReplicasMaxLag: &metav1.Duration{Duration: 10 * time.Second}, ManageReplicaSettings: true},
			Tenants: tenantSelector(),
		}
	}
	withAll := h.createClusterStore("with-all", store(full))
	without := h.createClusterStore("without", store(bare))
	// Under the failover quarantine: the controller writes the key's
	// epoch record (HSET) with its user.
	job := onStore(v1alpha1.StoreKindClusterLockStore, withAll.Name, "job")
	job.Safety = &v1alpha1.SafetySpec{FailoverQuarantine: true}
	h.createIn(ns, "job", job)
	h.createIn(ns, "other", onStore(v1alpha1.StoreKindClusterLockStore, without.Name, "job"))

	h.waitStore(withAll, "Ready, guarded, one tenant", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		if err := storeProvisioned(1)(st, gen); err != nil {
			return err
		}
		if err := storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied); err != nil {
			return err
		}
		if err := storeCondition(st, gen, v1alpha1.ConditionFunctionsLoaded, metav1.ConditionTrue, v1alpha1.ReasonLibraryLoaded); err != nil {
			return err
		}
		return storeCondition(st, gen, v1alpha1.ConditionPreflight, metav1.ConditionTrue, v1alpha1.ReasonPersistenceDisabled)
	})
	dl := h.waitForIn(ns, "job", "Ready", readyOn(ns+"/job", v1alpha1.RedisModeReplicated, "redlease-"+withAll.Name))
	h.waitForIn(ns, "job", "the epoch recorded with the controller's user", isQuarantineIdle)
	locker := newLocker(t, h.podClient(dl), lock.WithIdentity("pod-a"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(ctx, ns+"/job")
	if err != nil {
		t.Fatalf("acquiring as the tenant: %v", err)
	}
	h.waitForIn(ns, "job", "the holder observed with the controller's user", holderIs("pod-a", lease.Fence()))
	if err := lease.Release(ctx); err != nil {
		t.Errorf("releasing: %v", err)
	}

	h.waitStore(without, "what the user lacks, named", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		for _, c := range []struct {
			typ, reason string
			status      metav1.ConditionStatus
		}{
			{v1alpha1.ConditionReplicationGuarded, v1alpha1.ReasonConfigUnavailable, metav1.ConditionFalse},
			{v1alpha1.ConditionReady, v1alpha1.ReasonConfigUnavailable, metav1.ConditionFalse},
			{v1alpha1.ConditionTenantsProvisioned, v1alpha1.ReasonACLUnavailable, metav1.ConditionFalse},
			{v1alpha1.ConditionPreflight, v1alpha1.ReasonConfigUnavailable, metav1.ConditionUnknown},
			{v1alpha1.ConditionFunctionsLoaded, v1alpha1.ReasonFunctionsUnavailable, metav1.ConditionFalse},
		} {
			if err := storeCondition(st, gen, c.typ, c.status, c.reason); err != nil {
				return err
			}
		}
		return nil
	})
}

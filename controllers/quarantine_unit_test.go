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
	"k8s.io/utils/ptr"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// TestQuarantineBound: the cutoff is minReplicasMaxLag + 2s where a guard
// bounds the cut-off master and 0 on Standalone; the bound holds only
// where min-replicas-to-write covers every replica of the key's master
// (an inline lock's probe, or a store's connectedReplicas).
func TestQuarantineBound(t *testing.T) {
	guard := func(toWrite int32, manage bool) *v1alpha1.SafetySpec {
		return &v1alpha1.SafetySpec{MinReplicasToWrite: toWrite, MinReplicasMaxLag: &metav1.Duration{Duration: 3 * time.Second}, ManageReplicaSettings: manage}
	}
	master := func(replicas int) *endpoint {
		e := &endpoint{addr: "m:6379", probed: true}
		for range replicas {
			e.info.Replicas = append(e.info.Replicas, redisprobe.Replica{Online: true})
		}
		return e
	}
	store := func(connected int32) *v1alpha1.LockStoreStatus {
		return &v1alpha1.LockStoreStatus{Endpoints: []v1alpha1.EndpointStatus{{Address: "m:6379", Role: v1alpha1.EndpointRoleMaster, ConnectedReplicas: ptr.To(connected)}}}
	}
	for _, c := range []struct {
		name    string
		mode    v1alpha1.RedisMode
		safety  *v1alpha1.SafetySpec
		master  *endpoint
		store   *v1alpha1.LockStoreStatus
		cutoff  time.Duration
		unsound string // in the reason, "" when sound
	}{
		{"standalone", v1alpha1.RedisModeStandalone, nil, master(0), nil, 0, ""},
		{"redlock store", v1alpha1.RedisModeRedlock, nil, nil, store(0), 0, "is Redlock"},
		{"every replica required", v1alpha1.RedisModeReplicated, guard(2, true), master(2), nil, 5 * time.Second, ""},
		{"one of two required", v1alpha1.RedisModeSentinel, guard(1, true), master(2), nil, 5 * time.Second, "has 2 replica(s) and min-replicas-to-write 1"},
		{"guard only checked", v1alpha1.RedisModeReplicated, guard(2, false), master(2), nil, 5 * time.Second, "not managed"},
		{"a replica down", v1alpha1.RedisModeCluster, guard(2, true), master(1), nil, 5 * time.Second, ""},
		{"store guarding every replica", v1alpha1.RedisModeReplicated, guard(2, true), master(0), store(2), 5 * time.Second, ""},
		{"store guarding one of three", v1alpha1.RedisModeReplicated, guard(1, true), master(0), store(3), 5 * time.Second, "the spec.safety of LockStore/ns/s"},
	} {
		rd := &round{store: &storeSpec{kind: "LockStore", namespace: "ns", name: "s", redis: &v1alpha1.RedisSpec{Mode: c.mode}, safety: c.safety}, master: c.master, masterAddr: "m:6379"}
		cutoff, unsound := quarantineBound(rd, c.store)
		if cutoff != c.cutoff {
			t.Errorf("%s: cutoff %v, want %v", c.name, cutoff, c.cutoff)
		}
		if (unsound == "") != (c.unsound == "") || !strings.Contains(unsound, c.unsound) {
			t.Errorf("%s: unsound %q, want %q", c.name, unsound, c.unsound)
		}
	}
}

// TestQuarantineEnd: status.quarantinedUntil is rounded up to the second
// and does not move back by the round trips of two reads of one end.
func TestQuarantineEnd(t *testing.T) {
	base := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	prev := &metav1.Time{Time: base.Add(5 * time.Second)}
	for _, c := range []struct {
		name string
		end  time.Time
		prev *metav1.Time
		want time.Time
	}{
		{"whole second", base.Add(5 * time.Second), nil, base.Add(5 * time.Second)},
		{"rounded up", base.Add(4*time.Second + time.Millisecond), nil, base.Add(5 * time.Second)},
		{"a little earlier than before", base.Add(3*time.Second + 990*time.Millisecond), prev, base.Add(5 * time.Second)},
		{"later than before", base.Add(5*time.Second + time.Millisecond), prev, base.Add(6 * time.Second)},
		{"a new quarantine, much later", base.Add(time.Minute), prev, base.Add(time.Minute)},
		{"much earlier than before", base.Add(time.Second), prev, base.Add(time.Second)},
	} {
		if got := quarantineEnd(c.end, c.prev); !got.Time.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got.Time, c.want)
		}
	}
}

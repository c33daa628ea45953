/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// TestLockerRunsTheQuarantineTheStatusPublishes: a lock that asks for the
// failover quarantine is not Ready to its pods until the status publishes
// the cutoff; then the pods' scripts run the quarantine with a missing
// epoch record read as lost (lock.MissingEpochWaits): with the record the
// controller writes before first use, the key is granted at once; with
// the key and its record gone (a failover that lost both), a quarantine
// of ttl + 2 % holds grants back. Without the option the second
// acquisition would be granted at once.
func TestLockerRunsTheQuarantineTheStatusPublishes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	dl := createLock(t, env, ns, "settle", v1alpha1.DistributedLockSpec{
		TTL:    &metav1.Duration{Duration: 2 * time.Second},
		Safety: &v1alpha1.SafetySpec{FailoverQuarantine: true},
	})
	key := ns + "/settle"
	publish(t, env, dl, key, standalone(srv.Addr()), password(""))
	l := newKubeLocker(t, podConfig(t, env, ns, credentialsSecret), ns, "settle", lock.WithIdentity("pod-a"))
	_, err := l.TryAcquire(t.Context())
	if !errors.Is(err, kube.ErrNotReady) || !strings.Contains(err.Error(), "status.failoverQuarantine") {
		t.Fatalf("TryAcquire without status.failoverQuarantine = %v, want ErrNotReady naming it", err)
	}

	// What the controller does: the record, then the status.
	if _, err := protocol.RecordEpoch(t.Context(), protocol.Scripts(srv.Client(t)), key, 2*time.Second, protocol.Quarantine{On: true}); err != nil {
		t.Fatal(err)
	}
	status := l.Resource().Status
	status.FailoverQuarantine = &v1alpha1.FailoverQuarantineStatus{EpochRecorded: &metav1.Time{Time: time.Now()}}
	setStatus(t, env, dl, status)
	var lease *lock.Lease
	deadline := time.Now().Add(10 * time.Second)
	for lease == nil {
		if lease, err = l.TryAcquire(t.Context()); err != nil && (!errors.Is(err, kube.ErrNotReady) || time.Now().After(deadline)) {
			t.Fatalf("TryAcquire with the record written = %v, want the lease at once", err)
		}
		if lease == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The key and its record lost together.
	if err := srv.Client(t).Del(t.Context(), key, protocol.EpochKey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = l.TryAcquire(t.Context())
	var na *lock.NotAcquiredError
	if !errors.As(err, &na) || na.Quarantine <= 0 || na.Quarantine > 2040*time.Millisecond {
		t.Fatalf("TryAcquire after the record was lost = %v, want a quarantine of at most ttl + 2 %%", err)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// quarantineSpec is a Replicated lock of ttl 2s under the failover
// quarantine, guarded by toWrite replicas within 1s of lag.
func quarantineSpec(toWrite int32, addrs ...string) v1alpha1.DistributedLockSpec {
	spec := replicatedSpec(toWrite, time.Second, addrs...)
	spec.TTL = &metav1.Duration{Duration: 2 * time.Second}
	spec.Safety.FailoverQuarantine = true
	return spec
}

// epochRecord reads a key's epoch record on s ("" fields: none).
func epochRecord(ctx context.Context, t *testing.T, s *redistest.Server, key string) (map[string]string, error) {
	return s.Client(t).HGetAll(ctx, protocol.EpochKey(key)).Result()
}

// isQuarantineIdle: Ready, the record written, no quarantine.
func isQuarantineIdle(dl *v1alpha1.DistributedLock) error {
	if err := isReady(dl); err != nil {
		return err
	}
	if err := hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionTrue, v1alpha1.ReasonEpochRecorded); err != nil {
		return err
	}
	if q := dl.Status.FailoverQuarantine; q == nil || q.EpochRecorded == nil {
		return fmt.Errorf("status.failoverQuarantine = %+v, want epochRecorded set", q)
	}
	if dl.Status.QuarantinedUntil != nil {
		return fmt.Errorf("status.quarantinedUntil = %v, want none", dl.Status.QuarantinedUntil)
	}
	return nil
}

// TestFailoverQuarantine: a Replicated lock under the quarantine gets its
// epoch record (written by the controller before first use, replicated)
// and publishes the cutoff its pods use (minReplicasMaxLag 1s + 2s). When
// the replica is promoted after the master died, the controller's check
// of the record on the new master starts the quarantine:
// status.quarantinedUntil and a Warning Event Quarantined, about ttl 2s +
// cutoff 3s + 2 % later; it clears after that. Without the controller's
// write the new master would read no record (a new key) and grant at once
// to a second holder of a lease the old master granted.
func TestFailoverQuarantine(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	group := redistest.StartReplicated(t, 1)
	master, replica := group.Master, group.Replicas[0]
	h.create("quarantined", quarantineSpec(1, master.Addr(), replica.Addr()))
	dl := h.waitFor("quarantined", "Ready with the epoch recorded", isQuarantineIdle)
	if got := dl.Status.FailoverQuarantine.Cutoff.Duration; got != 3*time.Second {
		t.Errorf("status.failoverQuarantine.cutoff = %v, want 3s (minReplicasMaxLag 1s + 2s)", got)
	}
	ctx := h.ctx()
	key := dl.Status.Key
	h.eventually("the epoch record replicated", func() error {
		rec, err := epochRecord(ctx, t, replica, key)
		if err != nil || rec["run"] == "" || rec["ttl"] != "2000" {
			return fmt.Errorf("record on the replica: %v (%w)", rec, err)
		}
		return nil
	})

	// The failover: the master dies, the replica is promoted and, its
	// guard needing one replica, gets a new one.
	master.Kill()
	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	spare := redistest.StartStandalone(t)
	host, port, _ := strings.Cut(replica.Addr(), ":")
	if err := spare.Client(t).ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	failedOver := time.Now()
	dl = h.waitFor("quarantined", "quarantined on the new master", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.QuarantinedUntil == nil {
			return errors.New("no status.quarantinedUntil")
		}
		return hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionTrue, v1alpha1.ReasonQuarantined)
	})
	if dl.Status.Master != replica.Addr() {
		t.Errorf("status.master = %q, want the promoted %s", dl.Status.Master, replica.Addr())
	}
	// At most ttl + cutoff + 2 % (5.1s) from the controller's check, which
	// came before now, rounded up to the second: under 6.1s from now.
	const longest = 5100*time.Millisecond + time.Second
	if until := dl.Status.QuarantinedUntil.Time; until.After(time.Now().Add(longest)) || until.Before(failedOver) {
		t.Errorf("status.quarantinedUntil = %v, want after the failover at %v and within %v of now", until, failedOver, longest)
	}
	if err := isReady(dl); err != nil {
		t.Errorf("a quarantine holds grants back, the lock stays Ready: %v", err)
	}
	h.waitEvent("quarantined", corev1.EventTypeWarning, v1alpha1.ReasonQuarantined)
	rec, err := epochRecord(ctx, t, replica, key)
	if err != nil || rec["until"] == "" {
		t.Errorf("record on the new master: %v (%v), want a quarantine", rec, err)
	}

	h.waitFor("quarantined", "the quarantine over", isQuarantineIdle)
	t.Logf("quarantine published and cleared %v after the promotion", time.Since(failedOver).Round(100*time.Millisecond))
}

// TestFailoverQuarantineAfterRestartEmpty: a Standalone lock's record
// (cutoff 0) lost with a restart that lost every write reads as a loss,
// since the controller remembers writing it (epochRecorded): a quarantine
// of ttl + 2 %, not a record written afresh as a new key's.
func TestFailoverQuarantineAfterRestartEmpty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	spec := standaloneSpec(srv.Addr())
	spec.TTL = &metav1.Duration{Duration: 2 * time.Second}
	spec.Safety = &v1alpha1.SafetySpec{FailoverQuarantine: true}
	h.create("restarted", spec)
	dl := h.waitFor("restarted", "Ready with the epoch recorded", isQuarantineIdle)
	if got := dl.Status.FailoverQuarantine.Cutoff.Duration; got != 0 {
		t.Errorf("status.failoverQuarantine.cutoff = %v, want 0 on Standalone", got)
	}
	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	h.waitFor("restarted", "quarantined after the restart", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.QuarantinedUntil == nil {
			return errors.New("no status.quarantinedUntil")
		}
		return hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionTrue, v1alpha1.ReasonQuarantined)
	})
	h.waitEvent("restarted", corev1.EventTypeWarning, v1alpha1.ReasonQuarantined)
	h.waitFor("restarted", "the quarantine over", isQuarantineIdle)
}

// TestFailoverQuarantineUnsound: a guard of one replica where the master
// has two leaves the quarantine's bound unproven (an old master cut off
// with one replica goes on granting): FailoverQuarantine and Ready False,
// QuarantineUnsound, with a Warning Event. Raising minReplicasToWrite to
// two makes it Ready.
func TestFailoverQuarantineUnsound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	group := redistest.StartReplicated(t, 2)
	h.create("unsound", quarantineSpec(1, group.Master.Addr()))
	dl := h.waitFor("unsound", "QuarantineUnsound", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionFalse, v1alpha1.ReasonQuarantineUnsound); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonQuarantineUnsound)
	})
	if msg := condition(dl, v1alpha1.ConditionFailoverQuarantine).Message; !strings.Contains(msg, "2 replica(s) and min-replicas-to-write 1") {
		t.Errorf("message %q does not say what falls short", msg)
	}
	h.waitEvent("unsound", corev1.EventTypeWarning, v1alpha1.ReasonQuarantineUnsound)

	ctx := h.ctx()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var dl v1alpha1.DistributedLock
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "unsound"}, &dl); err != nil {
			return err
		}
		dl.Spec.Safety.MinReplicasToWrite = 2
		return h.c.Update(ctx, &dl)
	})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("unsound", "Ready with every replica required", isQuarantineIdle)
}

// TestFailoverQuarantineTenants: on a ClusterLockStore with isolation ACL
// (Standalone), only the namespace whose lock uses the quarantine gets
// INFO server and replication, which its scripts read; its lock publishes
// cutoff 0 and its record is in place, so a pod of the namespace running
// the quarantine takes the key at once (the lock became Ready only once
// the credentials Secret said the user may: it is written after the
// users). The other namespace is refused INFO (it would see the
// server's pid, paths and replica addresses).
func TestFailoverQuarantineTenants(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 2})
	srv := redistest.StartStandalone(t)
	nsQ, nsPlain := h.extra[0], h.extra[1]
	for _, ns := range h.extra {
		h.labelNamespace(ns, tenantLabel, "true")
	}
	cs := h.createClusterStore("shared", aclStandaloneStore(srv.Addr()))
	spec := onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job")
	spec.Safety = &v1alpha1.SafetySpec{FailoverQuarantine: true}
	h.createIn(nsQ, "job", spec)
	h.createIn(nsPlain, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	h.waitStore(cs, "Ready with two tenants", storeProvisioned(2))
	dl := h.waitForIn(nsQ, "job", "Ready with the epoch recorded", isQuarantineIdle)
	plain := h.waitForIn(nsPlain, "job", "Ready", isReady)
	if plain.Status.FailoverQuarantine != nil || meta.FindStatusCondition(plain.Status.Conditions, v1alpha1.ConditionFailoverQuarantine) != nil {
		t.Errorf("a lock without the quarantine publishes %+v", plain.Status.FailoverQuarantine)
	}

	for ns, want := range map[string]string{nsQ: "true", nsPlain: "false"} {
		var s corev1.Secret
		if err := h.c.Get(h.ctx(), client.ObjectKey{Namespace: ns, Name: "redlease-" + cs.Name}, &s); err != nil {
			t.Fatal(err)
		}
		if got := s.Annotations[annotationQuarantineRights]; got != want {
			t.Errorf("%s: the credentials Secret says %s=%q, want %q", ns, annotationQuarantineRights, got, want)
		}
	}

	ctx := h.ctx()
	q := h.podClient(dl)
	if err := q.Info(ctx, "server").Err(); err != nil {
		t.Errorf("INFO server as the quarantine's namespace: %v", err)
	}
	locker := newLocker(t, q, lock.WithIdentity("q-pod"), lock.WithTTL(2*time.Second),
		lock.WithFailoverQuarantine(dl.Status.FailoverQuarantine.Cutoff.Duration, lock.MissingEpochWaits))
	lease, err := locker.TryAcquire(ctx, dl.Status.Key)
	if err != nil {
		t.Fatalf("acquiring %s under the quarantine, its record written by the controller: %v", dl.Status.Key, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Error(err)
	}
	// INFO replication is every tenant's (the hand-off counter's history,
	// protocol 6); INFO server only the quarantine's namespaces'.
	if err := h.podClient(plain).Info(ctx, "server").Err(); !isNoPerm(err) {
		t.Errorf("INFO server as a namespace without the quarantine: %v, want NOPERM", err)
	}
	if err := h.podClient(plain).Info(ctx, "replication").Err(); err != nil {
		t.Errorf("INFO replication as a namespace without the quarantine: %v, want it allowed (protocol 6)", err)
	}
}

// TestFailoverQuarantineSentinel: a SENTINEL FAILOVER of a guarded
// Sentinel lock (every replica required) starts the quarantine on the
// new master, which clears after ttl + cutoff + 2 %.
func TestFailoverQuarantineSentinel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	g := redistest.StartSentinel(t, 1)
	spec := quarantineSpec(1)
	spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel, Sentinel: &v1alpha1.SentinelSpec{MasterName: g.MasterName, Addresses: g.SentinelAddrs()}}
	h.create("sentinel", spec)
	h.waitFor("sentinel", "Ready with the epoch recorded", isQuarantineIdle)
	newMaster, err := g.Failover(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	failedOver := time.Now()
	h.waitFor("sentinel", "quarantined on the new master", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Master != newMaster || dl.Status.QuarantinedUntil == nil {
			return fmt.Errorf("master %s, quarantinedUntil %v: want %s and a quarantine", dl.Status.Master, dl.Status.QuarantinedUntil, newMaster)
		}
		return hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionTrue, v1alpha1.ReasonQuarantined)
	})
	// The new master refuses writes (min-replicas-to-write 1) until the
	// demoted one has resynced: the record, and so the quarantine, start
	// then.
	quarantined := time.Since(failedOver)
	h.waitEvent("sentinel", corev1.EventTypeWarning, v1alpha1.ReasonQuarantined)
	h.waitFor("sentinel", "the quarantine over", isQuarantineIdle)
	t.Logf("quarantine published %v and cleared %v after the failover", quarantined.Round(100*time.Millisecond), time.Since(failedOver).Round(100*time.Millisecond))
}

// TestFailoverQuarantineCluster: on a Redis Cluster (three masters, one
// replica each, every replica required), a CLUSTER FAILOVER of the shard
// that serves the key starts the quarantine on the key's new master.
func TestFailoverQuarantineCluster(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	cl := redistest.StartCluster(t, redistest.WithClusterReplicas(1))
	spec := quarantineSpec(1)
	spec.Key = "catalog/reindex"
	spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Addresses: []string{cl.Masters[0].Addr()}}
	h.create("sharded", spec)
	dl := h.waitFor("sharded", "Ready with the epoch recorded", isQuarantineIdle)
	ctx := h.ctx()
	var replica *redistest.Server
	for _, r := range cl.Replicas {
		info, err := r.Info(ctx, "replication")
		if err != nil {
			t.Fatal(err)
		}
		if info["master_host"]+":"+info["master_port"] == dl.Status.Master {
			replica = r
		}
	}
	if replica == nil {
		t.Fatalf("no replica of the key's master %s", dl.Status.Master)
	}
	clusterFailover(ctx, t, replica)
	failedOver := time.Now()
	h.waitFor("sharded", "quarantined on the key's new master", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Master != replica.Addr() || dl.Status.QuarantinedUntil == nil {
			return fmt.Errorf("master %s, quarantinedUntil %v: want %s and a quarantine", dl.Status.Master, dl.Status.QuarantinedUntil, replica.Addr())
		}
		return hasCondition(dl, v1alpha1.ConditionFailoverQuarantine, metav1.ConditionTrue, v1alpha1.ReasonQuarantined)
	})
	quarantined := time.Since(failedOver)
	h.waitFor("sharded", "the quarantine over", isQuarantineIdle)
	t.Logf("quarantine published %v and cleared %v after the failover", quarantined.Round(100*time.Millisecond), time.Since(failedOver).Round(100*time.Millisecond))
}

// clusterFailover promotes replica with CLUSTER FAILOVER and waits until it
// is a master. A manual failover aborts when the replica has not caught up
// with its master's offset within 5 s (a loaded machine): it is asked again,
// for up to a minute.
func clusterFailover(ctx context.Context, t *testing.T, replica *redistest.Server) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if err := replica.Client(t).Do(ctx, "cluster", "failover").Err(); err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
			if info, err := replica.Info(ctx, "replication"); err == nil && info["role"] == "master" {
				return
			}
		}
	}
	t.Fatal("CLUSTER FAILOVER did not promote the replica within a minute")
}

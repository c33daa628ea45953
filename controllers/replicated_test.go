package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

func replicatedSpec(toWrite int32, lag time.Duration, addrs ...string) v1alpha1.DistributedLockSpec {
	return v1alpha1.DistributedLockSpec{
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: addrs},
		Safety: &v1alpha1.SafetySpec{
			MinReplicasToWrite:    toWrite,
			MinReplicasMaxLag:     &metav1.Duration{Duration: lag},
			ManageReplicaSettings: true,
		},
	}
}

// replicaSettings reads a server's guard from outside.
func replicaSettings(ctx context.Context, c *redis.Client) (string, string, error) {
	m, err := c.ConfigGet(ctx, "min-replicas-*").Result()
	if err != nil {
		return "", "", err
	}
	return m["min-replicas-to-write"], m["min-replicas-max-lag"], nil
}

// TestReplicated: given only the master's address, the controller
// discovers both replicas, applies min-replicas-to-write 1 /
// min-replicas-max-lag 7 on the master and verifies them
// (ReplicationGuarded True, GuardApplied Event), repairs drift made from
// outside, and when a second lock asks the same master for 2 replicas the
// stricter value applies and both locks report SettingsConflict.
func TestReplicated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	group := redistest.StartReplicated(t, 2)
	master := group.Master
	h.create("settle", replicatedSpec(1, 7*time.Second, master.Addr()))

	dl := h.waitFor("settle", "Ready with the guard applied", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
	})
	if dl.Status.Master != master.Addr() {
		t.Errorf("status.master = %q, want %q", dl.Status.Master, master.Addr())
	}
	var got []string
	for _, e := range dl.Status.Endpoints {
		got = append(got, fmt.Sprintf("%s %s %v", e.Address, e.Role, e.Reachable))
	}
	want := []string{master.Addr() + " Master true"}
	reps := []string{group.Replicas[0].Addr() + " Replica true", group.Replicas[1].Addr() + " Replica true"}
	slices.Sort(reps)
	want = append(want, reps...)
	if !slices.Equal(got, want) {
		t.Errorf("endpoints = %q, want the master and both discovered replicas %q", got, want)
	}
	if n := dl.Status.Endpoints[0].ConnectedReplicas; n == nil || *n != 2 {
		t.Errorf("master connectedReplicas = %v, want 2", n)
	}
	ctx := h.ctx()
	admin := master.Client(t)
	if tw, lag, err := replicaSettings(ctx, admin); err != nil || tw != "1" || lag != "7" {
		t.Fatalf("master has min-replicas-to-write %q, min-replicas-max-lag %q (%v); want 1 and 7", tw, lag, err)
	}
	h.waitEvent("settle", corev1.EventTypeNormal, v1alpha1.ReasonGuardApplied)

	// Drift from outside is repaired.
	if err := admin.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	h.eventually("drift repaired", func() error {
		tw, _, err := replicaSettings(ctx, admin)
		if err != nil {
			return fmt.Errorf("reading min-replicas-to-write: %w", err)
		}
		if tw != "1" {
			return fmt.Errorf("min-replicas-to-write %q", tw)
		}
		return nil
	})

	// A second lock wants 2 replicas on the same master (reached through
	// another address of it): the stricter value applies, both conflict.
	h.create("audit", replicatedSpec(2, 9*time.Second, fmt.Sprintf("localhost:%d", master.Port())))
	for _, name := range []string{"settle", "audit"} {
		dl := h.waitFor(name, "SettingsConflict", func(dl *v1alpha1.DistributedLock) error {
			if err := isReady(dl); err != nil {
				return err
			}
			return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonSettingsConflict)
		})
		t.Logf("%s: %s", name, condition(dl, v1alpha1.ConditionReplicationGuarded).Message)
		h.waitEvent(name, corev1.EventTypeWarning, v1alpha1.ReasonSettingsConflict)
	}
	if tw, lag, err := replicaSettings(ctx, admin); err != nil || tw != "2" || lag != "7" {
		t.Errorf("master has min-replicas-to-write %q, min-replicas-max-lag %q (%v); want the stricter 2 and 7", tw, lag, err)
	}
}

// TestConfigUnavailable: a master whose CONFIG is renamed away cannot get
// the guard the lock asks for: ReplicationGuarded False ConfigUnavailable,
// Ready False; the controller neither crashes nor loops (a handful of
// reconciles over several probe intervals).
func TestConfigUnavailable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{probeInterval: time.Second})
	group := redistest.StartReplicated(t, 1, redistest.WithConfig("--rename-command", "CONFIG", `""`))
	h.create("noconfig", replicatedSpec(1, 10*time.Second, group.Master.Addr(), group.Replicas[0].Addr()))

	dl := h.waitFor("noconfig", "ConfigUnavailable", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionFalse, v1alpha1.ReasonConfigUnavailable); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConfigUnavailable)
	})
	t.Logf("ReplicationGuarded: %s", condition(dl, v1alpha1.ConditionReplicationGuarded).Message)
	// The servers themselves are fine.
	if err := hasCondition(dl, v1alpha1.ConditionEndpointsResolved, metav1.ConditionTrue, ""); err != nil {
		t.Error(err)
	}
	h.waitEvent("noconfig", corev1.EventTypeWarning, v1alpha1.ReasonConfigUnavailable)

	// No hot loop: at 1s per probe (and backoff starting at 1s), 6 s allow
	// about 6 reconciles; a loop would do thousands.
	c := h.counter("noconfig")
	before := c.Load()
	time.Sleep(6 * time.Second) // the measurement window, not an assertion on timing
	n := c.Load() - before
	if n > 15 {
		t.Errorf("%d reconciles in 6s: a hot loop", n)
	}
	if n < 2 {
		t.Errorf("%d reconciles in 6s: the lock is not requeued", n)
	}
	t.Logf("%d reconciles in 6s", n)
}

package controllers

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestSentinel: the master comes from the Sentinels and status.master
// follows a SENTINEL FAILOVER (with a MasterChanged Event); the Sentinels
// appear in status.endpoints with role Sentinel.
func TestSentinel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	g := redistest.StartSentinel(t, 1)
	h.create("watched", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{
		Mode:     v1alpha1.RedisModeSentinel,
		Sentinel: &v1alpha1.SentinelSpec{MasterName: g.MasterName, Addresses: g.SentinelAddrs()},
	}})
	dl := h.waitFor("watched", "Ready on the first master", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		if dl.Status.Master != g.Master.Addr() {
			return fmt.Errorf("master %q, want %q", dl.Status.Master, g.Master.Addr())
		}
		return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonNotRequested)
	})
	roles := map[v1alpha1.EndpointRole]int{}
	for _, e := range dl.Status.Endpoints {
		roles[e.Role]++
	}
	if roles[v1alpha1.EndpointRoleMaster] != 1 || roles[v1alpha1.EndpointRoleReplica] != 1 || roles[v1alpha1.EndpointRoleSentinel] != 3 {
		t.Errorf("endpoint roles = %v, want 1 master, 1 replica, 3 sentinels", roles)
	}

	newMaster, err := g.Failover(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if newMaster == g.Master.Addr() {
		t.Fatalf("failover kept the master %s", newMaster)
	}
	h.waitFor("watched", "status.master follows the failover", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Master != newMaster {
			return fmt.Errorf("master %q, want %q", dl.Status.Master, newMaster)
		}
		return isReady(dl)
	})
	ev := h.waitEvent("watched", corev1.EventTypeNormal, v1alpha1.ReasonMasterChanged)
	t.Logf("Event: %s", ev.Note)
}

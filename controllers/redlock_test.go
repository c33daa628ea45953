package controllers

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

func redlockSpec(addrs ...string) v1alpha1.DistributedLockSpec {
	return v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: addrs}}
}

// TestRedlockQuorum: three independent nodes reach the quorum of 2; with
// two of them killed the quorum is unavailable and the lock not Ready.
func TestRedlockQuorum(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	nodes := redistest.StartNodes(t, 3)
	h.create("trio", redlockSpec(nodes[0].Addr(), nodes[1].Addr(), nodes[2].Addr()))
	dl := h.waitFor("trio", "quorum reached", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionQuorumAvailable, metav1.ConditionTrue, v1alpha1.ReasonQuorumReached)
	})
	if dl.Status.Quorum != 2 {
		t.Errorf("status.quorum = %d, want 2", dl.Status.Quorum)
	}
	if len(dl.Status.Endpoints) != 3 || dl.Status.Master != "" {
		t.Errorf("endpoints %d, master %q; want 3 endpoints and no master", len(dl.Status.Endpoints), dl.Status.Master)
	}
	if c := condition(dl, v1alpha1.ConditionReplicationGuarded); c.Type != "" {
		t.Errorf("unexpected ReplicationGuarded in Redlock mode")
	}

	// One node down: still a quorum (EndpointsResolved says which).
	nodes[0].Kill()
	h.waitFor("trio", "one node down", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionEndpointsResolved, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable); err != nil {
			return err
		}
		return isReady(dl)
	})
	nodes[1].Kill()
	dl = h.waitFor("trio", "quorum lost", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionQuorumAvailable, metav1.ConditionFalse, v1alpha1.ReasonQuorumUnavailable); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonQuorumUnavailable)
	})
	if msg := condition(dl, v1alpha1.ConditionQuorumAvailable).Message; !strings.HasPrefix(msg, "1 independent reachable node(s) of 3, quorum 2") {
		t.Errorf("QuorumAvailable message %q", msg)
	}
	h.waitEvent("trio", corev1.EventTypeWarning, v1alpha1.ReasonQuorumUnavailable)
}

// TestRedlockNotIndependent: nodes that are one server, or a master and its
// replica, are counted once and reported as NodesNotIndependent.
func TestRedlockNotIndependent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	nodes := redistest.StartNodes(t, 2)
	group := redistest.StartReplicated(t, 1)
	cases := []struct {
		name        string
		addrs       []string
		independent int
		why         string
	}{
		{
			name:        "same-server",
			addrs:       []string{nodes[0].Addr(), fmt.Sprintf("localhost:%d", nodes[0].Port()), nodes[1].Addr()},
			independent: 2,
			why:         "are the same server",
		},
		{
			name:        "master-and-replica",
			addrs:       []string{group.Master.Addr(), group.Replicas[0].Addr(), nodes[1].Addr()},
			independent: 2,
			why:         "replicate one another",
		},
	}
	for _, tc := range cases {
		h.create(tc.name, redlockSpec(tc.addrs...))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dl := h.waitFor(tc.name, "NodesNotIndependent", func(dl *v1alpha1.DistributedLock) error {
				if err := hasCondition(dl, v1alpha1.ConditionQuorumAvailable, metav1.ConditionFalse, v1alpha1.ReasonNodesNotIndependent); err != nil {
					return err
				}
				return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNodesNotIndependent)
			})
			msg := condition(dl, v1alpha1.ConditionQuorumAvailable).Message
			if want := fmt.Sprintf("%d independent reachable node(s) of 3", tc.independent); !strings.HasPrefix(msg, want) {
				t.Errorf("message %q does not start with %q", msg, want)
			}
			if !strings.Contains(msg, tc.why) {
				t.Errorf("message %q does not say the nodes %s", msg, tc.why)
			}
			t.Logf("QuorumAvailable: %s", msg)
		})
	}
}

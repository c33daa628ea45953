/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/locktest"
)

// leadingManager is the manager pod holding the leader election Lease.
func leadingManager(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	leases, err := cs.CoordinationV1().Leases(operatorNS).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if h := l.Spec.HolderIdentity; h != nil && strings.HasPrefix(*h, "redlease-controller-manager-") {
			return strings.SplitN(*h, "_", 2)[0]
		}
	}
	return ""
}

// lockLook is one sample of a DistributedLock's status.
type lockLook struct {
	at         time.Time
	ready      metav1.ConditionStatus
	transition time.Time
	holder     string
}

func lookAt(t *testing.T, ns, name string) (lockLook, error) {
	var dl v1alpha1.DistributedLock
	if err := clusterC.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &dl); err != nil {
		return lockLook{}, err
	}
	l := lockLook{at: time.Now()}
	for _, c := range dl.Status.Conditions {
		if c.Type == "Ready" {
			l.ready, l.transition = c.Status, c.LastTransitionTime.Time
		}
	}
	if dl.Status.Holder != nil {
		l.holder = dl.Status.Holder.Identity
	}
	return l, nil
}

// sampleLock looks at a DistributedLock every 200 ms until the returned
// function is called, which returns the looks.
func sampleLock(t *testing.T, ns, name string) func() []lockLook {
	var mu sync.Mutex
	var looks []lockLook
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if l, err := lookAt(t, ns, name); err == nil {
				mu.Lock()
				looks = append(looks, l)
				mu.Unlock()
			}
		}
	}()
	return func() []lockLook {
		close(stop)
		<-done
		return looks
	}
}

// activeHolder waits until the lock standby/leader's status names the pod
// the Service "active" routes to, and returns that look. Scenario 3 ends
// with a takeover, which the status shows within a probe interval.
func activeHolder(t *testing.T, cs *kubernetes.Clientset) lockLook {
	t.Helper()
	var l lockLook
	locktest.Eventually(t, time.Minute, "the lock's status names the active pod", func() error {
		var err error
		if l, err = lookAt(t, "standby", "leader"); err != nil {
			return err
		}
		active, err := readyEndpoints(t, cs, "standby", "active")
		if err != nil {
			return err
		}
		if len(active) != 1 || l.ready != metav1.ConditionTrue || !strings.HasPrefix(l.holder, active[0]+":") {
			return fmt.Errorf("holder %q, Ready %s, active %v", l.holder, l.ready, active)
		}
		return nil
	})
	return l
}

// deleteLeadingManager deletes the manager pod that leads and returns how
// long until another holds the Lease.
func deleteLeadingManager(t *testing.T, cs *kubernetes.Clientset) time.Duration {
	t.Helper()
	kubectl(t, "rollout", "status", "-n", operatorNS, "deployment/redlease-controller-manager", "--timeout=2m")
	old := leadingManager(t, cs)
	if old == "" {
		t.Fatal("no manager leads")
	}
	begin := time.Now()
	kubectl(t, "delete", "pod", "-n", operatorNS, old, "--wait=false")
	locktest.Eventually(t, time.Minute, "another manager leads after deleting "+old, func() error {
		if now := leadingManager(t, cs); now == "" || now == old {
			return fmt.Errorf("the Lease is held by %q", now)
		}
		return nil
	})
	took := time.Since(begin)
	t.Logf("deleted leading manager %s: %s leads after %s", old, leadingManager(t, cs), ms(took))
	return took
}

// TestScenario7OperatorFailover: with scenario 3's lock held (its holder a
// pod of the standby Deployment), deleting the leading manager pod three
// times: the other replica takes the leader election Lease, the lock stays
// Ready at every sample with the same transition time and the same holder
// (no status flapping, no lease lost), and the new leader follows the lock
// (a new holder shows in its status).
func TestScenario7OperatorFailover(t *testing.T) {
	cs := cluster(t)
	const ns = "standby"
	if l, err := lookAt(t, ns, "leader"); err != nil || l.ready != metav1.ConditionTrue {
		t.Fatalf("needs scenario 1 and 3 before it (the operator, the lock standby/leader Ready): %+v, %v", l, err)
	}
	first := activeHolder(t, cs)
	looks := sampleLock(t, ns, "leader")
	var took []time.Duration
	for range 3 {
		took = append(took, deleteLeadingManager(t, cs))
	}
	// Past a probe interval under the new leader.
	time.Sleep(12 * time.Second)
	samples := looks()
	for _, l := range samples {
		if l.ready != metav1.ConditionTrue || !l.transition.Equal(first.transition) || l.holder != first.holder {
			t.Errorf("%s: Ready %s since %s, holder %q; want True since %s, holder %q throughout", l.at.Format("15:04:05.000"), l.ready, l.transition, l.holder, first.transition, first.holder)
		}
	}
	t.Logf("%d samples of the lock during the failovers: Ready, holder %s throughout", len(samples), first.holder)
	t.Logf("MEASURE manager failover (delete of the leading pod to another's Lease): %s (leaseDuration 15s, released on SIGTERM)", p50max(took))

	// The new leader follows the lock: a new holder after the holder's pod
	// is deleted.
	kubectl(t, "delete", "pod", "-n", ns, strings.SplitN(first.holder, ":", 2)[0], "--wait=false")
	locktest.Eventually(t, time.Minute, "the lock's status shows a new holder", func() error {
		l, err := lookAt(t, ns, "leader")
		if err != nil {
			return err
		}
		if l.holder == "" || l.holder == first.holder || l.ready != metav1.ConditionTrue {
			return fmt.Errorf("holder %q, Ready %s", l.holder, l.ready)
		}
		return nil
	})
	operatorMemory(t, cs)
}

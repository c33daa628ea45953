package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// readyRedlock is a Ready Redlock resource as a pod reads it, with the
// endpoints the controller published in status.
func readyRedlock(redis v1alpha1.RedisSpec, endpoints ...string) *v1alpha1.DistributedLock {
	redis.Mode = v1alpha1.RedisModeRedlock
	dl := &v1alpha1.DistributedLock{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction", Generation: 1},
		Spec:       v1alpha1.DistributedLockSpec{Key: "jobs/compaction", Redis: redis},
	}
	for _, e := range endpoints {
		dl.Status.Endpoints = append(dl.Status.Endpoints, v1alpha1.EndpointStatus{Address: e, Role: v1alpha1.EndpointRoleMaster, Reachable: true})
	}
	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonAvailable, ObservedGeneration: 1})
	return dl
}

// TestRedlockNodesComeFromTheSpecOnly (issue 10, item 2): two pods that read
// a Redlock-through-a-Service resource at different moments of a rolling
// restart saw different ready endpoints (3 of the 5 nodes each, overlapping
// in one) and each counted a majority of what it saw: two holders with no
// node failing. Redlock nodes come from spec.redis.addresses only; a
// resource without them is not usable.
func TestRedlockNodesComeFromTheSpecOnly(t *testing.T) {
	nodes := redistest.StartNodes(t, 5)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr())
	}
	svc := &v1alpha1.ServiceReference{Name: "redlock", Port: 6379}
	views := []*v1alpha1.DistributedLock{
		readyRedlock(v1alpha1.RedisSpec{Service: svc}, addrs[0], addrs[1], addrs[2]),
		readyRedlock(v1alpha1.RedisSpec{Service: svc}, addrs[2], addrs[3], addrs[4]),
	}
	var held []*lock.Lease
	for i, dl := range views {
		tg, err := resolve(t.Context(), nil, dl)
		if !errors.Is(err, ErrNotReady) {
			t.Errorf("pod %d: resolve with status endpoints %v = %v, want ErrNotReady (Redlock nodes come from spec.redis.addresses only)",
				i, tg.addrs, err)
		}
		if err != nil {
			t.Logf("pod %d: %v", i, err)
			continue
		}
		l, clients, err := tg.connect([]lock.Option{lock.WithIdentity(fmt.Sprintf("pod-%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close(); closeAll(clients) })
		if lease, err := l.TryAcquire(t.Context(), tg.key); err == nil {
			held = append(held, lease)
		}
	}
	if len(held) > 1 {
		t.Errorf("%d holders of %s at once, no node failing", len(held), views[0].Spec.Key)
	}
	for _, lease := range held {
		_ = lease.Release(context.Background())
	}

	// With addresses, every node is used, whatever status lists.
	dl := readyRedlock(v1alpha1.RedisSpec{Addresses: addrs}, addrs[0], addrs[1], addrs[2])
	tg, err := resolve(t.Context(), nil, dl)
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.addrs) != 5 {
		t.Errorf("nodes %v, want the spec's 5 addresses", tg.addrs)
	}
}

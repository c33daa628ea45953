package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestCluster: from one seed, the controller resolves all three masters of
// a real Redis Cluster, is Ready, names the master serving the key's slot,
// and observes a holder through a cluster client.
func TestCluster(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	cl := redistest.StartCluster(t)
	h.create("sharded", v1alpha1.DistributedLockSpec{
		Key:   "catalog/reindex",
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Addresses: []string{cl.Masters[1].Addr()}},
	})
	dl := h.waitFor("sharded", "Ready", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionEndpointsResolved, metav1.ConditionTrue, "")
	})
	var masters, want []string
	for _, e := range dl.Status.Endpoints {
		if e.Role == v1alpha1.EndpointRoleMaster && e.Reachable {
			masters = append(masters, e.Address)
		}
	}
	for _, m := range cl.Masters {
		want = append(want, m.Addr())
	}
	slices.Sort(masters)
	slices.Sort(want)
	if !slices.Equal(masters, want) {
		t.Errorf("masters in status %v, want %v", masters, want)
	}
	if !slices.Contains(want, dl.Status.Master) {
		t.Errorf("status.master %q is not a master", dl.Status.Master)
	}

	locker := newLocker(t, cl.Client(t), lock.WithIdentity("indexer"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(h.ctx(), "catalog/reindex")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	h.waitFor("sharded", "the holder observed on the slot's master", holderIs("indexer", lease.Fence()))
	// The slot's master really holds the key.
	owner := cl.Masters[slices.IndexFunc(cl.Masters, func(s *redistest.Server) bool { return s.Addr() == dl.Status.Master })]
	if n, err := owner.Client(t).Exists(h.ctx(), "catalog/reindex").Result(); err != nil || n != 1 {
		t.Errorf("status.master %s does not hold the key: EXISTS %d, %v", owner.Addr(), n, err)
	}
}

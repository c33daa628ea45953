package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
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

// TestIdentity: what moves a lock (and so needs its held leases to end
// before a new binding) and what does not.
func TestIdentity(t *testing.T) {
	base := func() *v1alpha1.DistributedLock {
		return &v1alpha1.DistributedLock{
			ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction"},
			Spec: v1alpha1.DistributedLockSpec{Key: "jobs/compaction", Redis: v1alpha1.RedisSpec{
				Mode: v1alpha1.RedisModeReplicated, Addresses: []string{"r-0:6379", "r-1:6379"}}},
			Status: v1alpha1.DistributedLockStatus{Master: "r-0:6379"},
		}
	}
	sentinel := func(dl *v1alpha1.DistributedLock) {
		dl.Spec.Redis = v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel,
			Sentinel: &v1alpha1.SentinelSpec{MasterName: "locks", Addresses: []string{"s-0:26379"}}}
	}
	for _, c := range []struct {
		name   string
		change func(dl *v1alpha1.DistributedLock)
		moves  bool
	}{
		{"nothing", func(*v1alpha1.DistributedLock) {}, false},
		{"key", func(dl *v1alpha1.DistributedLock) { dl.Spec.Key = "jobs/other" }, true},
		{"key left to its default, the same effective key", func(dl *v1alpha1.DistributedLock) { dl.Spec.Key = "" }, false},
		{"mode", func(dl *v1alpha1.DistributedLock) { dl.Spec.Redis.Mode = v1alpha1.RedisModeCluster }, true},
		{"db", func(dl *v1alpha1.DistributedLock) { dl.Spec.Redis.DB = 1 }, true},
		{"an address", func(dl *v1alpha1.DistributedLock) { dl.Spec.Redis.Addresses[1] = "r-2:6379" }, true},
		{"a service instead", func(dl *v1alpha1.DistributedLock) {
			dl.Spec.Redis.Addresses, dl.Spec.Redis.Service = nil, &v1alpha1.ServiceReference{Name: "redis", Port: 6379}
		}, true},
		{"addresses reordered", func(dl *v1alpha1.DistributedLock) { dl.Spec.Redis.Addresses = []string{"r-1:6379", "r-0:6379"} }, false},
		{"status.master (a failover)", func(dl *v1alpha1.DistributedLock) { dl.Status.Master = "r-1:6379" }, false},
		{"ttl, credentials, TLS", func(dl *v1alpha1.DistributedLock) {
			dl.Spec.TTL = &metav1.Duration{Duration: time.Minute}
			dl.Spec.Redis.Username = "locks"
			dl.Spec.Redis.TLS = &v1alpha1.TLSSpec{Enabled: true}
		}, false},
		{"sentinel master name", func(dl *v1alpha1.DistributedLock) { sentinel(dl); dl.Spec.Redis.Sentinel.MasterName = "other" }, true},
	} {
		before, after := base(), base()
		if strings.HasPrefix(c.name, "sentinel") {
			sentinel(before)
		}
		c.change(after)
		key := func(dl *v1alpha1.DistributedLock) string {
			if dl.Spec.Key != "" {
				return dl.Spec.Key
			}
			return protocol.DefaultKey(dl.Namespace, dl.Name)
		}
		a, b := identityOf(before, key(before)), identityOf(after, key(after))
		if moves := a != b; moves != c.moves {
			t.Errorf("%s: %v -> %v: moves = %v, want %v", c.name, a, b, moves, c.moves)
		}
	}
}

// TestCheckReady: only a Ready condition that is True, and was not set for
// an older generation (observedGeneration 0: not recorded), lets a pod use
// the lock.
func TestCheckReady(t *testing.T) {
	withReady := func(status metav1.ConditionStatus, observed int64) *v1alpha1.DistributedLock {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction", Generation: 2}}
		apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
			Reason: "Because", Message: "the reason's message", ObservedGeneration: observed})
		return dl
	}
	for _, c := range []struct {
		name  string
		dl    *v1alpha1.DistributedLock
		ready bool
		want  string // in the error
	}{
		{"no condition", &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction"}}, false, "no Ready condition yet"},
		{"false", withReady(metav1.ConditionFalse, 2), false, "Because: the reason's message"},
		{"unknown", withReady(metav1.ConditionUnknown, 2), false, "Because"},
		{"true for an older generation", withReady(metav1.ConditionTrue, 1), false, "not yet seen generation 2"},
		{"true", withReady(metav1.ConditionTrue, 2), true, ""},
		{"true without observedGeneration", withReady(metav1.ConditionTrue, 0), true, ""},
	} {
		err := checkReady(c.dl)
		if c.ready {
			if err != nil {
				t.Errorf("%s: checkReady = %v, want nil", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: checkReady = %v, want ErrNotReady mentioning %q", c.name, err, c.want)
		}
	}
}

// TestSetServers: where each mode's servers come from.
func TestSetServers(t *testing.T) {
	endpoints := []v1alpha1.EndpointStatus{
		{Address: "m-0:6379", Role: v1alpha1.EndpointRoleMaster},
		{Address: "r-0:6379", Role: v1alpha1.EndpointRoleReplica},
		{Address: "m-1:6379", Role: v1alpha1.EndpointRoleMaster},
	}
	sentinel := &v1alpha1.SentinelSpec{MasterName: "locks", Addresses: []string{"s-0:26379", "s-1:26379"}}
	svc := &v1alpha1.ServiceReference{Name: "redis", Port: 6379}
	for _, c := range []struct {
		name      string
		redis     v1alpha1.RedisSpec
		status    v1alpha1.DistributedLockStatus
		addrs     []string
		master    string   // Sentinel master name
		sentinels []string // Sentinel addresses
		notReady  bool     // an ErrNotReady error
		fails     bool     // another error
	}{
		{name: "standalone: the master in status", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"spec:6379"}},
			status: v1alpha1.DistributedLockStatus{Master: "m-0:6379"}, addrs: []string{"m-0:6379"}},
		{name: "replicated: the master in status", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Service: svc},
			status: v1alpha1.DistributedLockStatus{Master: "m-1:6379", Endpoints: endpoints}, addrs: []string{"m-1:6379"}},
		{name: "replicated without a master", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Service: svc},
			status: v1alpha1.DistributedLockStatus{Endpoints: endpoints}, notReady: true},
		{name: "sentinel: from the spec", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel, Sentinel: sentinel},
			status: v1alpha1.DistributedLockStatus{Master: "m-0:6379"}, master: "locks", sentinels: sentinel.Addresses},
		{name: "cluster: the spec's seeds", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Addresses: []string{"c-0:6379"}},
			status: v1alpha1.DistributedLockStatus{Endpoints: endpoints}, addrs: []string{"c-0:6379"}},
		{name: "cluster through a Service: the masters in status", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Service: svc},
			status: v1alpha1.DistributedLockStatus{Endpoints: endpoints}, addrs: []string{"m-0:6379", "m-1:6379"}},
		{name: "cluster through a Service with no endpoints", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Service: svc}, notReady: true},
		{name: "redlock: the spec's addresses only", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: []string{"a:1", "b:1", "c:1"}},
			status: v1alpha1.DistributedLockStatus{Endpoints: endpoints}, addrs: []string{"a:1", "b:1", "c:1"}},
		{name: "redlock through a Service", redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Service: svc},
			status: v1alpha1.DistributedLockStatus{Endpoints: endpoints}, notReady: true},
		{name: "unknown mode", redis: v1alpha1.RedisSpec{Mode: "Memcached"}, fails: true},
	} {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction"},
			Spec: v1alpha1.DistributedLockSpec{Redis: c.redis}, Status: c.status}
		tg := target{mode: c.redis.Mode}
		err := tg.setServers(dl)
		switch {
		case c.notReady || c.fails:
			if errors.Is(err, ErrNotReady) != c.notReady || err == nil {
				t.Errorf("%s: setServers = %v, want an error (ErrNotReady %v)", c.name, err, c.notReady)
			}
		case err != nil:
			t.Errorf("%s: setServers = %v", c.name, err)
		case !slices.Equal(tg.addrs, c.addrs) || tg.masterName != c.master || !slices.Equal(tg.sentinelAddrs, c.sentinels):
			t.Errorf("%s: addrs %v, master name %q, Sentinels %v; want %v, %q, %v", c.name, tg.addrs, tg.masterName, tg.sentinelAddrs, c.addrs, c.master, c.sentinels)
		}
	}
}

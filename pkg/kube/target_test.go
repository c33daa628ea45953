/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
)

// readyLock is a Ready resource as a pod reads it, its status published
// the way the controller does.
func readyLock(conn v1alpha1.ConnectionStatus) *v1alpha1.DistributedLock {
	dl := &v1alpha1.DistributedLock{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "compaction", Generation: 1},
		Status: v1alpha1.DistributedLockStatus{Key: "jobs/compaction", Connection: &conn,
			CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "redlease-shared"}},
	}
	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonAvailable, ObservedGeneration: 1})
	return dl
}

// TestIdentity: what moves a lock (and so needs its held leases to end
// before a new binding) and what is followed.
func TestIdentity(t *testing.T) {
	shared := &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"}
	for _, c := range []struct {
		name   string
		mode   v1alpha1.RedisMode
		change func(key *string, c *v1alpha1.ConnectionStatus)
		moves  bool
	}{
		{"nothing", v1alpha1.RedisModeReplicated, func(*string, *v1alpha1.ConnectionStatus) {}, false},
		{"key", v1alpha1.RedisModeReplicated, func(k *string, _ *v1alpha1.ConnectionStatus) { *k = "jobs/other" }, true},
		{"mode", v1alpha1.RedisModeReplicated, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Mode = v1alpha1.RedisModeStandalone }, true},
		{"db", v1alpha1.RedisModeReplicated, func(_ *string, c *v1alpha1.ConnectionStatus) { c.DB = 1 }, true},
		{"the Replicated master (a failover)", v1alpha1.RedisModeReplicated, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Addresses = []string{"r-1:6379"} }, false},
		{"the Standalone server", v1alpha1.RedisModeStandalone, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Addresses = []string{"r-1:6379"} }, false},
		{"TLS, not the lock", v1alpha1.RedisModeReplicated, func(_ *string, c *v1alpha1.ConnectionStatus) { c.TLS = &v1alpha1.ConnectionTLS{ServerName: "x"} }, false},
		{"a Redlock node", v1alpha1.RedisModeRedlock, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Addresses[1] = "r-9:6379" }, true},
		{"Redlock nodes reordered", v1alpha1.RedisModeRedlock, func(_ *string, c *v1alpha1.ConnectionStatus) {
			c.Addresses[0], c.Addresses[2] = c.Addresses[2], c.Addresses[0]
		}, false},
		{"a Cluster seed", v1alpha1.RedisModeCluster, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Addresses[0] = "r-9:6379" }, true},
		{"the Sentinel master name", v1alpha1.RedisModeSentinel, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Sentinel.MasterName = "other" }, true},
		{"the sentinels", v1alpha1.RedisModeSentinel, func(_ *string, c *v1alpha1.ConnectionStatus) { c.Sentinel.Addresses = []string{"s-9:26379"} }, false},
	} {
		conn := func() v1alpha1.ConnectionStatus {
			switch c.mode {
			case v1alpha1.RedisModeSentinel:
				return v1alpha1.ConnectionStatus{Mode: c.mode, Sentinel: &v1alpha1.SentinelConnection{MasterName: "locks", Addresses: []string{"s-0:26379"}}}
			case v1alpha1.RedisModeStandalone, v1alpha1.RedisModeReplicated:
				return v1alpha1.ConnectionStatus{Mode: c.mode, Addresses: []string{"r-0:6379"}}
			}
			return v1alpha1.ConnectionStatus{Mode: c.mode, Addresses: []string{"r-0:6379", "r-1:6379", "r-2:6379"}}
		}
		before, after := conn(), conn()
		key := "jobs/compaction"
		c.change(&key, &after)
		a, b := identityOf(shared, "jobs/compaction", &before), identityOf(shared, key, &after)
		if moves := a != b; moves != c.moves {
			t.Errorf("%s: %v -> %v: moves = %v, want %v", c.name, a, b, moves, c.moves)
		}
	}

	conn := v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"r-0:6379"}}
	onShared := identityOf(shared, "jobs/compaction", &conn)
	for name, store := range map[string]*v1alpha1.StoreReference{
		"another store":            {Kind: v1alpha1.StoreKindClusterLockStore, Name: "other"},
		"a LockStore of that name": {Kind: v1alpha1.StoreKindLockStore, Name: "shared"},
		"inline servers, no store": nil,
	} {
		if identityOf(store, "jobs/compaction", &conn) == onShared {
			t.Errorf("re-created on %s with the same key and server: not a move", name)
		}
	}
}

// TestCheckReady: only a Ready condition that is True, and was not set for
// an older generation (observedGeneration 0: not recorded), with the key,
// the connection and the credentials Secret in status, lets a pod use the
// lock.
func TestCheckReady(t *testing.T) {
	conn := v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}}
	withReady := func(status metav1.ConditionStatus, observed int64) *v1alpha1.DistributedLock {
		dl := readyLock(conn)
		dl.Generation = 2
		apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
			Reason: "Because", Message: "the reason's message", ObservedGeneration: observed})
		return dl
	}
	quarantineAsked := func(dl *v1alpha1.DistributedLock) *v1alpha1.DistributedLock {
		dl.Spec.Safety = &v1alpha1.SafetySpec{FailoverQuarantine: true}
		return dl
	}
	without := func(change func(*v1alpha1.DistributedLockStatus)) *v1alpha1.DistributedLock {
		dl := withReady(metav1.ConditionTrue, 2)
		change(&dl.Status)
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
		{"no status.key", without(func(s *v1alpha1.DistributedLockStatus) { s.Key = "" }), false, "without status.key"},
		{"no status.connection", without(func(s *v1alpha1.DistributedLockStatus) { s.Connection = nil }), false, "without status.connection"},
		{"no status.credentialsSecretRef", without(func(s *v1alpha1.DistributedLockStatus) { s.CredentialsSecretRef = nil }), false, "without status.credentialsSecretRef"},
		{"quarantine asked, no status.failoverQuarantine", quarantineAsked(withReady(metav1.ConditionTrue, 2)), false, "without status.failoverQuarantine"},
		{"none of them", without(func(s *v1alpha1.DistributedLockStatus) { *s = v1alpha1.DistributedLockStatus{Conditions: s.Conditions} }), false,
			"status.key, status.connection, status.credentialsSecretRef"},
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

// TestResolveRefusesConnectionsItCannotUse: a status.connection without
// what its mode needs, or a Redlock quorum that is not a majority of its
// nodes, is not Ready; the Secret is not even read.
func TestResolveRefusesConnectionsItCannotUse(t *testing.T) {
	redlock := func(quorum int32) *v1alpha1.DistributedLock {
		dl := readyLock(v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeRedlock, Addresses: []string{"a:1", "b:1", "c:1", "d:1", "e:1"}})
		dl.Status.Quorum = quorum
		return dl
	}
	for _, c := range []struct {
		name string
		dl   *v1alpha1.DistributedLock
		want string
	}{
		{"standalone without an address", readyLock(v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone}), "master's address"},
		{"sentinel without sentinels", readyLock(v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel}), "Sentinel mode needs"},
		{"redlock of two nodes", readyLock(v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeRedlock, Addresses: []string{"a:1", "b:1"}}), "odd number"},
		{"redlock quorum not a majority", redlock(2), "status.quorum 2 is not a majority of the 5 nodes"},
		{"unknown mode", readyLock(v1alpha1.ConnectionStatus{Mode: "Memcached", Addresses: []string{"a:1"}}), "unknown mode"},
	} {
		_, err := resolve(t.Context(), nil, c.dl)
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: resolve = %v, want ErrNotReady mentioning %q", c.name, err, c.want)
		}
	}
}

// TestFingerprint: a binding is rebuilt for what go-redis reads only when
// a client is made (TLS material, sentinels' credentials) and for lease
// settings, not for the servers' password, which the clients ask for on
// every new connection.
func TestFingerprint(t *testing.T) {
	base := func() target {
		return target{key: "jobs/compaction", ttl: time.Second,
			conn:    v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}, TLS: &v1alpha1.ConnectionTLS{}},
			servers: redisconn.Credentials{Username: "u", Password: "old", TLS: &redisconn.TLS{}}}
	}
	fp := base().fingerprint()
	for _, c := range []struct {
		name    string
		change  func(*target)
		rebuild bool
	}{
		{"servers' password", func(t *target) { t.servers.Password = "new" }, false},
		{"servers' username", func(t *target) { t.servers.Username = "v" }, false},
		{"the master", func(t *target) { t.conn.Addresses = []string{"m:2"} }, true},
		{"CA", func(t *target) { t.servers.TLS = &redisconn.TLS{CAPEM: []byte("x")} }, true},
		{"server name", func(t *target) { t.servers.TLS = &redisconn.TLS{ServerName: "x"} }, true},
		{"sentinels' password", func(t *target) { t.sentinels.Password = "x" }, true},
		{"ttl", func(t *target) { t.ttl = time.Minute }, true},
		{"maxHold", func(t *target) { t.maxHold = time.Hour }, true},
		{"waitForReplicas", func(t *target) { t.replicaAcks = 1 }, true},
		{"fairness", func(t *target) { t.fifo = true }, true},
		{"line order", func(t *target) { t.tickets = true }, true},
		{"permits", func(t *target) { t.permits = 3 }, true},
		{"failover quarantine", func(t *target) { cutoff := time.Duration(0); t.quarantine = &cutoff }, true},
	} {
		tg := base()
		c.change(&tg)
		if rebuild := tg.fingerprint() != fp; rebuild != c.rebuild {
			t.Errorf("%s: new binding = %v, want %v", c.name, rebuild, c.rebuild)
		}
	}
}

// TestLeaseSettings: what the spec says about leases reaches the Locker.
func TestLeaseSettings(t *testing.T) {
	dl := readyLock(v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}})
	if got := leaseSettings(dl); got.fifo || got.ttl != 30*time.Second || !got.fencing || got.maxHold != 0 {
		t.Errorf("defaults: %+v, want ttl 30s, fencing, no FIFO, no max hold", got)
	}
	dl.Spec.MaxHold = &metav1.Duration{Duration: time.Hour}
	if got := leaseSettings(dl).maxHold; got != time.Hour {
		t.Errorf("spec.maxHold 1h gave %v", got)
	}
	dl.Spec.Fairness = v1alpha1.FairnessFIFO
	if !leaseSettings(dl).fifo {
		t.Error("spec.fairness FIFO did not make a FIFO Locker")
	}
	if leaseSettings(dl).tickets {
		t.Error("spec.lineOrder unset made a Locker with ticket order")
	}
	dl.Spec.LineOrder = v1alpha1.LineOrderTicket
	if !leaseSettings(dl).tickets {
		t.Error("spec.lineOrder Ticket did not make a Locker with ticket order")
	}
	if got := leaseSettings(dl).permits; got != 1 {
		t.Errorf("permits unset: %d, want 1 (a lock)", got)
	}
	dl.Spec.Permits = 3
	if got := leaseSettings(dl).permits; got != 3 {
		t.Errorf("spec.permits 3 gave %d", got)
	}
}

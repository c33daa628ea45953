/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestHostileReplyKeepsTheManager: a lock on a server that answers every
// command with a bulk string of 2^50 bytes is not Ready (the endpoint's
// lastError says the reply is too large), and a lock on a real server in
// the same manager stays Ready. Before the reply limit, go-redis's
// make([]byte, n+2) panicked in probeAll's goroutine and the test binary
// died.
func TestHostileReplyKeepsTheManager(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	hostile := startHostileRedis(t, "hostile", func([]string) (string, bool) { return "$1125899906842624\r\n", true })
	srv := redistest.StartStandalone(t)
	h.create("hostile", standaloneSpec(hostile.Addr()))
	h.create("good", standaloneSpec(srv.Addr()))
	h.waitFor("hostile", "Ready=False with the reply refused", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable); err != nil {
			return err
		}
		if len(dl.Status.Endpoints) != 1 || !strings.Contains(dl.Status.Endpoints[0].LastError, "reply is larger") {
			return fmt.Errorf("endpoints %+v, want the reply refused", dl.Status.Endpoints)
		}
		return nil
	})
	h.waitFor("good", "Ready", isReady)
}

// TestDiscoveryIsBounded: a master that lists 3,000 replicas in INFO
// replication makes its Replicated lock not Ready (TooManyEndpoints, the
// message naming 3001 endpoints) without a dial to any of them, and a
// lock on a real server in the same manager stays Ready. Before the bound
// the controller dialed all 3,000 at once, every probe interval.
func TestDiscoveryIsBounded(t *testing.T) {
	t.Parallel()
	var dials atomic.Int64
	var d net.Dialer
	h := newHarness(t, harnessOptions{dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "10.") {
			dials.Add(1)
		}
		return d.DialContext(ctx, network, addr)
	}})
	lines := []string{"# Server", "redis_version:7.0.15", "run_id:scanner", "# Replication", "role:master", "connected_slaves:3000"}
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf("slave%d:ip=10.0.%d.%d,port=6379,state=online,offset=1,lag=0", i, i/250, i%250+1))
	}
	info := bulk(strings.Join(lines, "\r\n") + "\r\n")
	scanner := startHostileRedis(t, "scanner", func(args []string) (string, bool) {
		return info, strings.EqualFold(args[0], "INFO")
	})
	srv := redistest.StartStandalone(t)
	h.create("scanner", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{scanner.Addr()}}})
	h.create("good", standaloneSpec(srv.Addr()))
	h.waitFor("scanner", "Ready=False, TooManyEndpoints", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTooManyEndpoints); err != nil {
			return err
		}
		if msg := condition(dl, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "3001 endpoints") {
			return fmt.Errorf("Ready message %q does not name 3001 endpoints", msg)
		}
		return nil
	})
	h.waitFor("good", "Ready", isReady)
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials to the listed replicas, want none", n)
	}
}

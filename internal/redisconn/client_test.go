/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/internal/redistest"
)

// TestNewUniversalShapes: the clients of each mode, and the connection
// data NewUniversal refuses. Clients connect lazily: no server is needed.
func TestNewUniversalShapes(t *testing.T) {
	sentinel := &v1alpha1.SentinelConnection{MasterName: "locks", Addresses: []string{"s-0:26379"}}
	for _, c := range []struct {
		name    string
		conn    v1alpha1.ConnectionStatus
		servers redisconn.Credentials
		addrs   []string // of *redis.Client results, in order; nil: another client type
		count   int
		invalid bool
	}{
		{name: "standalone", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}}, addrs: []string{"m:1"}, count: 1},
		{name: "replicated: the published master only", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{"m:1", "r:1"}}, addrs: []string{"m:1"}, count: 1},
		{name: "sentinel", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel, Sentinel: sentinel}, count: 1},
		{name: "cluster", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeCluster, Addresses: []string{"c-0:1", "c-1:1"}}, count: 1},
		{name: "redlock: one client per node", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeRedlock, Addresses: []string{"a:1", "b:1", "c:1"}}, addrs: []string{"a:1", "b:1", "c:1"}, count: 3},
		{name: "TLS", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}, TLS: &v1alpha1.ConnectionTLS{}},
			servers: redisconn.Credentials{TLS: &redisconn.TLS{}}, addrs: []string{"m:1"}, count: 1},

		{name: "unknown mode", conn: v1alpha1.ConnectionStatus{Mode: "Memcached", Addresses: []string{"m:1"}}, invalid: true},
		{name: "standalone without address", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone}, invalid: true},
		{name: "sentinel without sentinels", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel, Sentinel: &v1alpha1.SentinelConnection{MasterName: "locks"}}, invalid: true},
		{name: "sentinel without master name", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel, Sentinel: &v1alpha1.SentinelConnection{Addresses: []string{"s:1"}}}, invalid: true},
		{name: "cluster with db 1", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeCluster, Addresses: []string{"c:1"}, DB: 1}, invalid: true},
		{name: "redlock of two nodes", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeRedlock, Addresses: []string{"a:1", "b:1"}}, invalid: true},
		{name: "TLS in the connection only", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}, TLS: &v1alpha1.ConnectionTLS{}}, invalid: true},
		{name: "TLS in the credentials only", conn: v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"m:1"}},
			servers: redisconn.Credentials{TLS: &redisconn.TLS{}}, invalid: true},
	} {
		clients, err := redisconn.NewUniversal(c.conn, c.servers, redisconn.Credentials{})
		if c.invalid {
			if !errors.Is(err, redisconn.ErrInvalidConnection) {
				t.Errorf("%s: %v, want ErrInvalidConnection", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(clients) != c.count {
			t.Errorf("%s: %d clients, want %d", c.name, len(clients), c.count)
		}
		for i, a := range c.addrs {
			if rc, ok := clients[i].(*redis.Client); !ok || rc.Options().Addr != a || !rc.Options().ContextTimeoutEnabled ||
				(rc.Options().TLSConfig != nil) != (c.servers.TLS != nil) {
				t.Errorf("%s: client %d is %T %+v, want a client of %s honouring context deadlines", c.name, i, clients[i], clients[i], a)
			}
		}
		redisconn.CloseAll(clients)
	}
}

// TestCredentialsSourceReachesNewConnections: a client keeps its open
// connections across a password rotation, and its next new connection
// authenticates with the password the source gives then, without a new
// client.
func TestCredentialsSourceReachesNewConnections(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithPassword("old"))
	admin := srv.Client(t)
	var (
		mu       sync.Mutex
		password = "old"
	)
	source := func(context.Context) (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		return "", password, nil
	}
	conn, _, err := redisconn.ParseURL("redis://" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	clients, err := redisconn.NewUniversal(conn, redisconn.Credentials{}, redisconn.Credentials{}, redisconn.WithCredentialsSource(source))
	if err != nil {
		t.Fatal(err)
	}
	defer redisconn.CloseAll(clients)
	rc := clients[0].(*redis.Client)
	ctx := t.Context()
	open := rc.Conn() // a connection authenticated with the old password
	defer func() { _ = open.Close() }()
	if err := open.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// Rotation as the controller does it: add the new password, hand it
	// out, drop the old one.
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", ">new").Err(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	password = "new"
	mu.Unlock()
	if err := admin.Do(ctx, "ACL", "SETUSER", "default", "<old").Err(); err != nil {
		t.Fatal(err)
	}

	if err := open.Ping(ctx).Err(); err != nil {
		t.Errorf("the connection opened before the rotation: %v", err)
	}
	fresh := rc.Conn() // the pool's only idle connection is taken: this one dials
	defer func() { _ = fresh.Close() }()
	if err := fresh.Ping(ctx).Err(); err != nil {
		t.Errorf("a connection opened after the rotation: %v", err)
	}
	if n := rc.PoolStats().TotalConns; n < 2 {
		t.Errorf("%d connections in the pool, want the open one and a new one", n)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestTenantIsRefusedOutsideItsNamespace: team-a's user, which runs the
// whole lifecycle on "team-a/…" (TestTenantRunsTheLockLifecycle), gets
// NOPERM for team-b's lock, fence and channel, for keys outside any
// namespace, and for every administrative command; through the library it
// can neither take nor read team-b's lock, which stays as team-b left it.
func TestTenantIsRefusedOutsideItsNamespace(t *testing.T) {
	// DEBUG enabled, so that refusing it is the ACL's doing.
	s := redistest.StartStandalone(t, redistest.WithDebugCommand())
	ctx := testContext(t)
	nodes := []*redistest.Server{s}
	pwA, pwB := redisacl.NewPassword(), redisacl.NewPassword()
	userA := provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, redisacl.Passwords{Current: pwA})
	userB := provision(ctx, t, nodes, "team-b", protocol.ACLOptions{}, redisacl.Passwords{Current: pwB})
	a := tenantClient(t, s, userA, pwA)

	// team-b holds its lock, with a fence.
	held, err := locktest.New(t, tenantClient(t, s, userB, pwB), lock.WithIdentity("team-b")).Acquire(ctx, "team-b/job")
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, held)

	refused := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"GET team-b/job", func(ctx context.Context) error { return a.Get(ctx, "team-b/job").Err() }},
		{"SET team-b/job", func(ctx context.Context) error { return a.Set(ctx, "team-b/job", "mine", 0).Err() }},
		{"DEL team-b/job", func(ctx context.Context) error { return a.Del(ctx, "team-b/job").Err() }},
		{"INCR team-b's fence", func(ctx context.Context) error { return a.Incr(ctx, "{team-b/job}:fence").Err() }},
		{"PUBLISH on team-b's channel", func(ctx context.Context) error {
			return a.Publish(ctx, "{team-b/job}:events", "released").Err()
		}},
		{"a script declaring team-b's key", func(ctx context.Context) error {
			return a.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"team-b/job"}).Err()
		}},
		{"GET job (no namespace)", func(ctx context.Context) error { return a.Get(ctx, "job").Err() }},
		{"SET job (no namespace)", func(ctx context.Context) error { return a.Set(ctx, "job", "x", 0).Err() }},
		{"GET team-a (the namespace without '/')", func(ctx context.Context) error { return a.Get(ctx, "team-a").Err() }},
		{"CONFIG GET", func(ctx context.Context) error { return a.ConfigGet(ctx, "*").Err() }},
		{"CONFIG SET", func(ctx context.Context) error { return a.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err() }},
		{"FLUSHALL", func(ctx context.Context) error { return a.FlushAll(ctx).Err() }},
		{"FLUSHDB", func(ctx context.Context) error { return a.FlushDB(ctx).Err() }},
		{"KEYS *", func(ctx context.Context) error { return a.Keys(ctx, "*").Err() }},
		{"SCAN", func(ctx context.Context) error { return a.Scan(ctx, 0, "*", 10).Err() }},
		{"SCRIPT FLUSH", func(ctx context.Context) error { return a.ScriptFlush(ctx).Err() }},
		{"ACL LIST", func(ctx context.Context) error { return a.Do(ctx, "acl", "list").Err() }},
		{"ACL SETUSER", func(ctx context.Context) error { return a.Do(ctx, "acl", "setuser", userA, "+@all").Err() }},
		{"DEBUG", func(ctx context.Context) error { return a.Do(ctx, "debug", "sleep", "0").Err() }},
		{"CLIENT KILL", func(ctx context.Context) error { return a.ClientKillByFilter(ctx, "USER", userB).Err() }},
		{"SELECT 1", func(ctx context.Context) error { return a.Do(ctx, "select", 1).Err() }},
		{"INFO", func(ctx context.Context) error { return a.Info(ctx).Err() }},
		{"SHUTDOWN", func(ctx context.Context) error { return a.Do(ctx, "shutdown", "nosave").Err() }},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) { wantNoPerm(t, tt.name, tt.run(ctx)) })
	}

	// Scripts' own commands are checked too, keys declared or not. Servers
	// word that refusal as an ERR, not NOPERM, each its own way: Redis 7.0
	// "... can't access ...", Redis 7.4 and Valkey 8 "ACL failure in
	// script: No permissions to access a key" (make test-servers).
	t.Run("a script reaching team-b's key undeclared", func(t *testing.T) {
		err := a.Eval(ctx, "return redis.call('DEL', 'team-b/job')", []string{"team-a/job"}).Err()
		var reply redis.Error
		if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "NOPERM") && !strings.Contains(reply.Error(), "can't access") && !strings.Contains(reply.Error(), "ACL failure in script") {
			t.Errorf("got %v, want an ACL refusal", err)
		}
	})

	t.Run("SUBSCRIBE to team-b's channel", func(t *testing.T) {
		ps := a.Subscribe(ctx, "{team-b/job}:events")
		defer func() { _ = ps.Close() }()
		_, err := ps.Receive(ctx)
		wantNoPerm(t, "SUBSCRIBE", err)
	})

	t.Run("the library on other keys", func(t *testing.T) {
		locker := locktest.New(t, a, lock.WithIdentity("team-a"))
		for _, key := range []string{"team-b/job", "job"} {
			if l, err := locker.Acquire(ctx, key); err == nil {
				locktest.ReleaseAtEnd(t, l)
				t.Errorf("Acquire %q as team-a succeeded", key)
			} else {
				wantNoPerm(t, "Acquire "+key, err)
			}
			if h, err := locker.Inspect(ctx, key); err == nil {
				t.Errorf("Inspect %q as team-a = %+v, want NOPERM", key, h)
			}
		}
	})

	// Nothing of the above touched team-b's lock, nor created "job".
	admin := s.Client(t)
	if v, err := admin.Get(ctx, "team-b/job").Result(); err != nil || v != held.Value() {
		t.Errorf("team-b/job = %q, %v; want team-b's value", v, err)
	}
	if f, err := admin.Get(ctx, "{team-b/job}:fence").Uint64(); err != nil || f != held.Fence() {
		t.Errorf("team-b's fence = %d, %v; want %d", f, err, held.Fence())
	}
	if n, err := admin.Exists(ctx, "job", "{job}:fence", "team-a").Result(); err != nil || n != 0 {
		t.Errorf("keys outside any namespace: %d exist (%v), want none", n, err)
	}
	if err := held.Renew(ctx); err != nil {
		t.Errorf("team-b's lease no longer renews: %v", err)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestRotation follows a password rotation (DESIGN §10.1): the new password
// is added while the previous one is kept by hash, then the previous one is
// dropped. A lease held throughout keeps renewing and a subscription keeps
// receiving: re-provisioning disconnects nobody. New connections follow the
// password list; connections already open with the dropped password stay
// authenticated until closed, because Redis checks a password only when a
// connection authenticates (the package doc says so).
func TestRotation(t *testing.T) {
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	nodes := []*redistest.Server{s}
	p1, p2 := redisacl.NewPassword(), redisacl.NewPassword()
	user := provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, redisacl.Passwords{Current: p1})

	// One connection, so that what it does after the rotation is done on
	// the connection authenticated with p1 before it.
	client1 := tenantClient(t, s, user, p1, func(o *redis.Options) { o.PoolSize = 1 })
	lease, err := locktest.New(t, client1, lock.WithoutWatchdog()).Acquire(ctx, tenantKey)
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, lease)
	ch := protocol.EventsChannel(tenantKey)
	sub := client1.Subscribe(ctx, ch)
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	opened := clientIDs(ctx, t, s, user)
	if len(opened) != 2 {
		t.Fatalf("connections of %s: %v, want client1's and its subscription's", user, opened)
	}

	stillOpen := func(stage string) {
		t.Helper()
		if err := lease.Renew(ctx); err != nil {
			t.Errorf("%s: the held lease no longer renews: %v", stage, err)
		}
		if err := tenantClient(t, s, user, p2).Publish(ctx, ch, stage).Err(); err != nil {
			t.Fatalf("%s: PUBLISH with p2: %v", stage, err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if msg, err := sub.ReceiveMessage(rctx); err != nil || msg.Payload != stage {
			t.Errorf("%s: the subscription opened with p1 received %v, %v; want %q", stage, msg, err, stage)
		}
	}

	// Grace period: p2 is current, p1 still accepted by its hash.
	provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, redisacl.Passwords{Current: p2, PreviousHashes: []string{redisacl.PasswordHash(p1)}})
	stillOpen("grace")
	wantAuth(ctx, t, s, user, p1, "grace, p1")
	wantAuth(ctx, t, s, user, p2, "grace, p2")

	// p1 dropped.
	provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, redisacl.Passwords{Current: p2})
	wantWrongPass(ctx, t, s, user, p1, "after, p1")
	wantAuth(ctx, t, s, user, p2, "after, p2")
	stillOpen("after")
	after := clientIDs(ctx, t, s, user)
	for _, id := range opened {
		if !slices.Contains(after, id) {
			t.Errorf("connection %s of %s was closed by the rotation (before %v, after %v)", id, user, opened, after)
		}
	}
}

// wantAuth fails t unless a new connection authenticates as user with pw.
func wantAuth(ctx context.Context, t *testing.T, s *redistest.Server, user, pw, stage string) {
	t.Helper()
	if err := tenantClient(t, s, user, pw).Ping(ctx).Err(); err != nil {
		t.Errorf("%s: a new connection: %v", stage, err)
	}
}

// wantWrongPass fails t unless a new connection as user with pw is refused.
func wantWrongPass(ctx context.Context, t *testing.T, s *redistest.Server, user, pw, stage string) {
	t.Helper()
	err := tenantClient(t, s, user, pw, func(o *redis.Options) { o.MaxRetries = -1 }).Ping(ctx).Err()
	var reply redis.Error
	if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "WRONGPASS") {
		t.Errorf("%s: a new connection got %v, want WRONGPASS", stage, err)
	}
}

// clientIDs lists the ids of the connections authenticated as user.
func clientIDs(ctx context.Context, t *testing.T, s *redistest.Server, user string) []string {
	t.Helper()
	list, err := s.Client(t).ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.Lines(list) {
		if strings.Contains(line, " user="+user+" ") {
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			ids = append(ids, id)
		}
	}
	return ids
}

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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

// storeUID is the UID of the (imaginary) store whose tenants the tests
// provision.
const storeUID = "5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

// testTimeout bounds each test's Redis calls.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// provision creates namespace's user with password on every node, with the
// rules for opts completed by DetectOptions, and returns the username.
func provision(ctx context.Context, t *testing.T, nodes []*redistest.Server, namespace string, opts protocol.ACLOptions, pw redisacl.Passwords) string {
	t.Helper()
	user := protocol.TenantUsername(storeUID, namespace)
	for _, n := range nodes {
		admin := n.Client(t)
		detected, err := redisacl.DetectOptions(ctx, admin, opts)
		if err != nil {
			t.Fatal(err)
		}
		rules, err := protocol.TenantACLRules(namespace, detected)
		if err != nil {
			t.Fatal(err)
		}
		if err := redisacl.Provision(ctx, admin, user, rules, pw); err != nil {
			t.Fatal(err)
		}
	}
	return user
}

// tenantClient connects to s as user; closed when t ends.
func tenantClient(t *testing.T, s *redistest.Server, user, password string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	return s.Client(t, append([]func(*redis.Options){func(o *redis.Options) {
		o.Username, o.Password = user, password
	}}, opts...)...)
}

// resetACLLog empties every node's ACL LOG, so that what a test finds there
// afterwards is its own doing.
func resetACLLog(ctx context.Context, t *testing.T, nodes []*redistest.Server) {
	t.Helper()
	for _, n := range nodes {
		if err := n.Client(t).ACLLogReset(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// requireNoDenials fails t if any node logged an ACL denial: a command
// refused to a tenant even where the library or go-redis swallows the
// error (go-redis ignores a refused CLIENT SETINFO; the library's
// subscription loop retries a refused SUBSCRIBE).
func requireNoDenials(ctx context.Context, t *testing.T, nodes []*redistest.Server) {
	t.Helper()
	for _, n := range nodes {
		entries, err := n.Client(t).ACLLog(ctx, 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("%s: ACL denied user %s: %s %q (context %s, %d times)", n, e.Username, e.Reason, e.Object, e.Context, e.Count)
		}
	}
}

// wantNoPerm fails t unless err is Redis's NOPERM refusal.
func wantNoPerm(t *testing.T, what string, err error) {
	t.Helper()
	var reply redis.Error
	if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "NOPERM") {
		t.Errorf("%s: got %v, want a NOPERM refusal", what, err)
	}
}

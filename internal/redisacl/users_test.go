/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

func TestPruneDeletesOnlyUnkeptUsersOfItsPrefix(t *testing.T) {
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	admin := s.Client(t)
	prefix := protocol.TenantUserPrefix(storeUID)
	other := protocol.TenantUserPrefix("0badc0de-0000-4000-8000-000000000000")
	for _, u := range []string{
		prefix + "team-a", prefix + "team-b", prefix + "team-c",
		other + "team-b", // another store's tenant
		"alice",          // a person's
		// Shares all but the prefix's last byte.
		strings.TrimSuffix(prefix, "-") + "x",
	} {
		if err := admin.Do(ctx, "acl", "setuser", u).Err(); err != nil {
			t.Fatal(err)
		}
	}

	if got, err := redisacl.List(ctx, admin, prefix); err != nil || !slices.Equal(got, []string{prefix + "team-a", prefix + "team-b", prefix + "team-c"}) {
		t.Errorf("List = %q, %v", got, err)
	}
	deleted, err := redisacl.Prune(ctx, admin, prefix, map[string]bool{prefix + "team-a": true, other + "team-b": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{prefix + "team-b", prefix + "team-c"}; !slices.Equal(deleted, want) {
		t.Errorf("Prune deleted %q, want %q", deleted, want)
	}
	left, err := redisacl.List(ctx, admin, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alice", "default", other + "team-b", prefix + "team-a", strings.TrimSuffix(prefix, "-") + "x"}
	slices.Sort(want)
	if slices.Sort(left); !slices.Equal(left, want) {
		t.Errorf("users left %q, want %q", left, want)
	}

	if _, err := redisacl.Prune(ctx, admin, "", nil); err == nil {
		t.Error("Prune with an empty prefix did not refuse")
	}
	if deleted, err := redisacl.Prune(ctx, admin, "de", nil); err != nil || len(deleted) != 0 {
		t.Errorf(`Prune("de") = %q, %v; want the default user kept`, deleted, err)
	}
	if err := redisacl.Delete(ctx, admin, prefix+"team-a", prefix+"never-existed"); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if got, err := redisacl.List(ctx, admin, prefix); err != nil || len(got) != 0 {
		t.Errorf("after Delete, List = %q, %v", got, err)
	}
}

// TestProvisionReplacesWholeOrNothing: provisioning again changes nothing;
// a SETUSER the server rejects leaves the user exactly as it was (SETUSER
// is all or nothing), and says ErrACLUnavailable; Redis stores the
// password as PasswordHash computes it.
func TestProvisionReplacesWholeOrNothing(t *testing.T) {
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	admin := s.Client(t)
	pw := redisacl.NewPassword()
	rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := protocol.TenantUsername(storeUID, "team-a")
	getUser := func() map[any]any {
		t.Helper()
		m, err := admin.Do(ctx, "acl", "getuser", user).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m.(map[any]any) // RESP3
	}
	if err := redisacl.Provision(ctx, admin, user, rules, redisacl.Passwords{Current: pw}); err != nil {
		t.Fatal(err)
	}
	first := getUser()
	if got := first["passwords"]; !slices.Equal(got.([]any), []any{redisacl.PasswordHash(pw)}) {
		t.Errorf("stored passwords %v, want [PasswordHash(pw)]", got)
	}
	if err := redisacl.Provision(ctx, admin, user, rules, redisacl.Passwords{Current: pw}); err != nil {
		t.Fatal(err)
	}
	if again := getUser(); !reflect.DeepEqual(first, again) {
		t.Errorf("provisioning again changed the user:\n%v\n%v", first, again)
	}

	err = redisacl.Provision(ctx, admin, user, append(slices.Clone(rules), "+no-such-command"), redisacl.Passwords{Current: redisacl.NewPassword()})
	if !errors.Is(err, redisacl.ErrACLUnavailable) {
		t.Errorf("a rule the server rejects: %v, want ErrACLUnavailable", err)
	}
	if after := getUser(); !reflect.DeepEqual(first, after) {
		t.Errorf("a rejected SETUSER changed the user:\n%v\n%v", first, after)
	}
	wantAuth(ctx, t, s, user, pw, "after a rejected SETUSER")
}

// TestProvisionAfterRestart: a node restarted without an aclfile has
// forgotten the tenant (WRONGPASS), and provisioning again brings it back
// with the same password.
func TestProvisionAfterRestart(t *testing.T) {
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	nodes := []*redistest.Server{s}
	pw := redisacl.Passwords{Current: redisacl.NewPassword()}
	user := provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, pw)
	wantAuth(ctx, t, s, user, pw.Current, "before the restart")

	s.Stop()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	wantWrongPass(ctx, t, s, user, pw.Current, "after the restart")
	provision(ctx, t, nodes, "team-a", protocol.ACLOptions{}, pw)
	wantAuth(ctx, t, s, user, pw.Current, "provisioned again")
}

func TestACLUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		start func(t *testing.T) *redis.Client
	}{
		{"ACL renamed away", func(t *testing.T) *redis.Client {
			return redistest.StartStandalone(t, redistest.WithAdminForbidden()).Client(t)
		}},
		{"controller user without ACL", func(t *testing.T) *redis.Client {
			s := redistest.StartStandalone(t)
			if err := s.Client(t).Do(t.Context(), "acl", "setuser", "ops", "on", ">ops", "~*", "&*", "+@all", "-acl").Err(); err != nil {
				t.Fatal(err)
			}
			return tenantClient(t, s, "ops", "ops")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			c := tt.start(t)
			rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			user := protocol.TenantUsername(storeUID, "team-a")
			calls := map[string]error{
				"Provision": redisacl.Provision(ctx, c, user, rules, redisacl.Passwords{Current: "pw"}),
				"Delete":    redisacl.Delete(ctx, c, user),
			}
			_, calls["List"] = redisacl.List(ctx, c, "")
			_, calls["Prune"] = redisacl.Prune(ctx, c, "redlease-", nil)
			for name, err := range calls {
				if !errors.Is(err, redisacl.ErrACLUnavailable) {
					t.Errorf("%s: %v, want ErrACLUnavailable", name, err)
				}
				// The text goes into a store's status: it must not echo
				// the arguments (Redis quotes them after "unknown
				// command"), which carry the password's hash, new on
				// every attempt, so the status would change every time.
				if err != nil && (strings.Contains(err.Error(), redisacl.PasswordHash("pw")) || strings.Contains(err.Error(), "with args")) {
					t.Errorf("%s: %q echoes the command's arguments", name, err)
				}
			}
		})
	}
}

func TestProvisionRefusesBadInput(t *testing.T) {
	// Never dialled: Provision refuses before sending.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := redisacl.Passwords{Current: "pw"}
	tests := []struct {
		name  string
		user  string
		rules []string
		pw    redisacl.Passwords
	}{
		{"default user", "default", rules, good},
		{"empty user", "", rules, good},
		{"user with a space", "a b", rules, good},
		{"empty password", "u", rules, redisacl.Passwords{}},
		{"previous hash not hex", "u", rules, redisacl.Passwords{Current: "pw", PreviousHashes: []string{"p1"}}},
		{"previous hash in upper case", "u", rules, redisacl.Passwords{Current: "pw", PreviousHashes: []string{strings.ToUpper(redisacl.PasswordHash("p1"))}}},
		{"password in the rules", "u", append(slices.Clone(rules), ">pw"), good},
		{"hash in the rules", "u", append(slices.Clone(rules), "#"+redisacl.PasswordHash("pw")), good},
		{"nopass in the rules", "u", append(slices.Clone(rules), "nopass"), good},
		{"empty rule", "u", append(slices.Clone(rules), ""), good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redisacl.Provision(t.Context(), c, tt.user, tt.rules, tt.pw)
			if err == nil || errors.Is(err, redisacl.ErrACLUnavailable) || strings.Contains(err.Error(), "127.0.0.1:1") {
				t.Errorf("Provision = %v, want a refusal before sending", err)
			}
		})
	}
}

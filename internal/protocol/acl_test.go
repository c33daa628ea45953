/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package protocol_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/protocol"
)

// scriptCall finds the commands a script runs: redis.call('X' or
// redis.pcall("X".
var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z|]+)['"]`)

func TestTenantACLRulesCoverScripts(t *testing.T) {
	// SPUBLISH runs on Redis Cluster only where the server has it, which
	// is when the rules name it (ShardedPubSub).
	rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{ShardedPubSub: true, Functions: true, FunctionsOnly: true, Quarantine: true})
	if err != nil {
		t.Fatal(err)
	}
	// The lock's scripts, and those of what runs as a tenant on top of it
	// (pkg/election's, pkg/fence's): all in the one library.
	var files []string
	for _, pattern := range []string{"lua/*.lua"} {
		found, err := filepath.Glob(pattern)
		if err != nil || len(found) == 0 {
			t.Fatalf("no scripts found at %s (%v)", pattern, err)
		}
		files = append(files, found...)
	}
	for _, f := range files {
		src, err := os.ReadFile(f) //nolint:gosec // G304: a path from the Globs of this repository's script directories
		if err != nil {
			t.Fatal(err)
		}
		calls := scriptCall.FindAllStringSubmatch(string(src), -1)
		// lua/taken.lua only composes the fence's and the line's functions.
		if len(calls) == 0 && f != filepath.Join("lua", "taken.lua") {
			t.Errorf("%s: no redis.call found; has the calling convention changed?", f)
		}
		for _, m := range calls {
			cmds := []string{"+" + strings.ToLower(m[1])}
			if cmds[0] == "+info" {
				// INFO's sections, each allowed by name.
				cmds = []string{"+info|server", "+info|replication"}
			}
			for _, cmd := range cmds {
				if !slices.Contains(rules, cmd) {
					t.Errorf("%s runs %s, which the tenant ACL rules do not allow (%s missing)", f, m[1], cmd)
				}
			}
		}
	}
}

func TestTenantACLRules(t *testing.T) {
	base := []string{
		"resetkeys", "~team-a/*", "~{team-a/*",
		"resetchannels", "&{team-a/*", "&team-a/*",
		"-@all",
		"+get", "+set", "+del", "+exists", "+incr", "+decr", "+time", "+pexpire", "+pttl", "+publish",
		"+zadd", "+zrem", "+zrange", "+zpopmin",
		"+type", "+zcard", "+zscore", "+zrangebyscore", "+zremrangebyscore", "+hdel", "+hgetall",
		"+wait", "+ping", "+subscribe", "+unsubscribe", "+multi", "+exec", "+hget", "+hset", "+hmget",
		"+info|replication",
	}
	scripts := []string{"+eval", "+evalsha"}
	tests := []struct {
		name  string
		opts  protocol.ACLOptions
		extra []string
	}{
		{"standalone db 0", protocol.ACLOptions{}, scripts},
		{"db 3 selects", protocol.ACLOptions{DB: 3}, append(scripts, "+select")},
		{"sharded pub/sub", protocol.ACLOptions{ShardedPubSub: true}, append(scripts, "+spublish", "+ssubscribe", "+sunsubscribe")},
		{"cluster", protocol.ACLOptions{Cluster: true}, append(scripts, "+cluster|slots", "+asking", "+readonly", "+command")},
		{"client setinfo", protocol.ACLOptions{ClientSetInfo: true}, append(scripts, "+client|setinfo")},
		{"failover quarantine", protocol.ACLOptions{Quarantine: true}, append(scripts, "+info|server")},
		{"functions beside scripts", protocol.ACLOptions{Functions: true}, append(scripts, "+fcall", "+fcall_ro")},
		// No Lua of the tenant's own: it cannot stall the shared server.
		{"functions only", protocol.ACLOptions{Functions: true, FunctionsOnly: true}, []string{"+fcall", "+fcall_ro"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.TenantACLRules("team-a", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if want := append(slices.Clone(base), tt.extra...); !slices.Equal(got, want) {
				t.Errorf("rules\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestTenantPatternsCoverDerivedNames ties the patterns to keys.go: every
// name derived from a namespace's key matches one of its patterns (all of
// the form "prefix*"), and no other namespace's does.
func TestTenantPatternsCoverDerivedNames(t *testing.T) {
	rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keyPrefixes, channelPrefixes []string
	for _, r := range rules {
		switch {
		case strings.HasPrefix(r, "~"):
			keyPrefixes = append(keyPrefixes, strings.TrimSuffix(r[1:], "*"))
		case strings.HasPrefix(r, "&"):
			channelPrefixes = append(channelPrefixes, strings.TrimSuffix(r[1:], "*"))
		}
	}
	matches := func(prefixes []string, name string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	tests := []struct {
		key  string
		ours bool
	}{
		{"team-a/job", true},
		{"team-a/orders{42}", true}, // own hash tag: "K:fence", "K:events"
		{"team-a/{x}", true},
		{"team-b/job", false},
		{"team-ab/job", false},
		{"team/job", false},
		{"job", false},
		{"team-a", false},
	}
	for _, tt := range tests {
		for _, name := range []string{tt.key, protocol.FenceKey(tt.key), protocol.LineKey(tt.key),
			protocol.PermitLineKey(tt.key), protocol.HoldersKey(tt.key)} {
			if got := matches(keyPrefixes, name); got != tt.ours {
				t.Errorf("key %q: allowed %v, want %v", name, got, tt.ours)
			}
		}
		for _, ch := range []string{protocol.EventsChannel(tt.key), protocol.WaiterChannel(tt.key, "pod-1:7")} {
			if matches(channelPrefixes, ch) != tt.ours {
				t.Errorf("channel %q: allowed %v, want %v", ch, !tt.ours, tt.ours)
			}
		}
	}
}

func TestTenantACLRulesRefuseBadInput(t *testing.T) {
	tests := []struct {
		name string
		ns   string
		opts protocol.ACLOptions
	}{
		{"empty", "", protocol.ACLOptions{}},
		{"glob star", "team*", protocol.ACLOptions{}},
		{"glob question", "team?", protocol.ACLOptions{}},
		{"glob class", "team[ab]", protocol.ACLOptions{}},
		{"backslash", `team\`, protocol.ACLOptions{}},
		{"slash", "team/a", protocol.ACLOptions{}},
		{"space", "team a", protocol.ACLOptions{}},
		{"upper case", "Team", protocol.ACLOptions{}},
		{"leading dash", "-team", protocol.ACLOptions{}},
		{"trailing dash", "team-", protocol.ACLOptions{}},
		{"brace", "{team", protocol.ACLOptions{}},
		{"too long", strings.Repeat("a", 64), protocol.ACLOptions{}},
		{"negative db", "team-a", protocol.ACLOptions{DB: -1}},
		{"functions only without functions", "team-a", protocol.ACLOptions{FunctionsOnly: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rules, err := protocol.TenantACLRules(tt.ns, tt.opts); err == nil {
				t.Errorf("TenantACLRules(%q, %+v) = %q, want an error", tt.ns, tt.opts, rules)
			}
		})
	}
	if _, err := protocol.TenantACLRules(strings.Repeat("a", 63), protocol.ACLOptions{}); err != nil {
		t.Errorf("a 63-character namespace: %v", err)
	}
}

func TestTenantUsername(t *testing.T) {
	const uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	if got, want := protocol.TenantUserPrefix(uid), "redlease-0f1e2d3c-"; got != want {
		t.Errorf("TenantUserPrefix = %q, want %q", got, want)
	}
	if got, want := protocol.TenantUsername(uid, "team-a"), "redlease-0f1e2d3c-team-a"; got != want {
		t.Errorf("TenantUsername = %q, want %q", got, want)
	}
	if got, want := protocol.TenantUserPrefix("abc"), "redlease-abc-"; got != want {
		t.Errorf("TenantUserPrefix of a short UID = %q, want %q", got, want)
	}
}

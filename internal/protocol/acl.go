/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package protocol

import (
	"fmt"
	"strconv"
)

// ACLOptions are what a tenant's ACL rules depend on besides its namespace:
// the deployment's shape and what the server knows. Rules naming a command
// the server does not have make ACL SETUSER fail, so commands newer than
// Redis 6.2 are allowed only when the caller says the server has them.
type ACLOptions struct {
	// DB is the database clients SELECT on connect; 0 needs no SELECT.
	DB int
	// Cluster allows what a go-redis ClusterClient sends besides the lock
	// commands: slot discovery, redirections, command metadata.
	Cluster bool
	// ShardedPubSub allows SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE (Redis
	// 7.0 and later).
	ShardedPubSub bool
	// ClientSetInfo allows CLIENT SETINFO (Redis 7.2 and later), which
	// go-redis sends on every new connection. go-redis ignores its refusal,
	// but each refusal is an ACL LOG entry that would bury real ones.
	ClientSetInfo bool
	// Functions allows FCALL and FCALL_RO (Redis 7.0 and later, Valkey):
	// calling the library's functions (LibraryName).
	Functions bool
	// FunctionsOnly leaves out EVAL and EVALSHA: the tenant runs only the
	// library's functions, never Lua of its own, which could stall the
	// shared server (a busy loop answers BUSY to every client until
	// SCRIPT KILL) or fill its memory. Needs Functions, and the library
	// loaded on every master.
	FunctionsOnly bool
	// Quarantine allows INFO's server section, which the failover
	// quarantine's scripts read (Quarantine) besides INFO replication: it
	// also shows the tenant the server's pid and paths (SECURITY.md).
	Quarantine bool
}

// tenantCommands are the commands every tenant needs: what pkg/lock,
// pkg/election and pkg/fence's Redis store send and, because Redis checks
// the commands a script runs against the caller's ACL, what their scripts
// run. TestTenantACLRulesCoverScripts
// fails when a script starts using a command missing here; the ACL tests of
// internal/redisacl run the library's whole lifecycle as a tenant. HELLO
// and AUTH need no rule: Redis never checks no-auth commands against a
// user's ACL.
var tenantCommands = []string{
	// Run by the scripts; GET and PTTL are also Inspect's reads.
	"get", "set", "del", "exists", "incr", "decr", "time", "pexpire", "pttl", "publish",
	// The waiting line (protocol 2), run by the acquire and release scripts.
	"zadd", "zrem", "zrange", "zpopmin",
	// Semaphores (protocol 3): the holder set and the holders hash, run by
	// the permit scripts.
	"type", "zcard", "zscore", "zrangebyscore", "zremrangebyscore", "hdel", "hgetall",
	// WithReplicaAck; the PING before an ambiguous attempt is given back,
	// and on idle subscriptions.
	"wait", "ping",
	// Waiting for a release on the key's events channel.
	"subscribe", "unsubscribe",
	// pkg/election's observer reads the holder and its PTTL in one
	// transaction.
	"multi", "exec",
	// pkg/fence's Redis store: the fenced write script and Read.
	"hget", "hset", "hmget",
	// The hand-off counter's history (protocol 6, lua/fence.lua's
	// fence_history): the server's replication ID, read by the acquire
	// and release scripts. The section also shows the tenant its
	// replicas' addresses, offsets and lag (SECURITY.md). Without it the
	// scripts still run, and every hand-off costs a round trip.
	"info|replication",
}

// scriptCommands run the protocol's Lua as scripts: go-redis sends EVALSHA
// and falls back to EVAL on NOSCRIPT. They run any Lua, not only ours.
var scriptCommands = []string{"eval", "evalsha"}

// functionCommands call the library's functions (protocol.Caller): only
// the Lua that whoever loaded the library (the controller) chose.
var functionCommands = []string{"fcall", "fcall_ro"}

// clusterCommands are what a go-redis ClusterClient adds: CLUSTER SLOTS
// for the slot map (go-redis v9 never sends CLUSTER SHARDS, and naming it
// would fail ACL SETUSER before Redis 7.0), ASKING before a command
// redirected by -ASK during a slot migration, READONLY on every connection
// of a client with ReadOnly or RouteBy* (a refusal fails the connection),
// and COMMAND, whose metadata it fetches, and fetches again after each
// refusal, to route commands by their keys.
var clusterCommands = []string{"cluster|slots", "asking", "readonly", "command"}

// shardedPubSubCommands are the sharded twins of the events channel's
// commands (DESIGN §10.1): pkg/lock's scripts and subscriptions use them
// on Redis Cluster where the servers have them.
var shardedPubSubCommands = []string{"spublish", "ssubscribe", "sunsubscribe"}

// quarantineCommands are what lua/epoch.lua reads besides
// tenantCommands: the server's run ID (its replication IDs are in INFO
// replication, which every tenant may read).
var quarantineCommands = []string{"info|server"}

// TenantACLRules are the ACL SETUSER rules of namespace's Redis user on a
// lock store with isolation ACL: its keys are "<ns>/…" and their derived
// "{<ns>/…}:fence", its channels "{<ns>/…}:events" (or "<ns>/…:events" for
// a key with its own hash tag), and it may run only the commands the
// library and go-redis send. The rules carry no username and no password.
//
// This is the one list of what a tenant may run.
func TenantACLRules(namespace string, opts ACLOptions) ([]string, error) {
	if err := validateNamespace(namespace); err != nil {
		return nil, err
	}
	if opts.DB < 0 {
		return nil, fmt.Errorf("database %d is negative", opts.DB)
	}
	if opts.FunctionsOnly && !opts.Functions {
		return nil, fmt.Errorf("functions only, on a server without functions")
	}
	prefix := namespace + "/"
	// resetkeys and resetchannels make the rules whole by themselves: a
	// new user gets every channel where acl-pubsub-default is allchannels
	// (the default before Redis 7.0).
	rules := []string{
		"resetkeys", "~" + prefix + "*", "~{" + prefix + "*",
		"resetchannels", "&{" + prefix + "*", "&" + prefix + "*",
		"-@all",
	}
	allow := func(cmds []string) {
		for _, c := range cmds {
			rules = append(rules, "+"+c)
		}
	}
	allow(tenantCommands)
	if !opts.FunctionsOnly {
		allow(scriptCommands)
	}
	if opts.Functions {
		allow(functionCommands)
	}
	if opts.ShardedPubSub {
		allow(shardedPubSubCommands)
	}
	if opts.DB != 0 {
		allow([]string{"select"})
	}
	if opts.Cluster {
		allow(clusterCommands)
	}
	if opts.ClientSetInfo {
		allow([]string{"client|setinfo"})
	}
	if opts.Quarantine {
		allow(quarantineCommands)
	}
	return rules, nil
}

// tenantUIDChars is how much of the store's UID a tenant username carries:
// enough to tell stores apart, short enough to leave room for the
// namespace in what people read in ACL LIST.
const tenantUIDChars = 8

// TenantUserPrefix is what the names of storeUID's tenant users start with:
// "redlease-<first 8 chars of storeUID>-". A store deletes only users with
// its own prefix.
func TenantUserPrefix(storeUID string) string {
	return "redlease-" + storeUID[:min(len(storeUID), tenantUIDChars)] + "-"
}

// TenantUsername is the Redis ACL user of namespace on the store storeUID.
func TenantUsername(storeUID, namespace string) string {
	return TenantUserPrefix(storeUID) + namespace
}

// validateNamespace accepts a Kubernetes namespace name (an RFC 1123 DNS
// label): lowercase letters, digits and '-', starting and ending with a
// letter or digit, at most 63 bytes. That leaves out every character Redis
// reads in a key or channel pattern (* ? [ ] \ ^ and '/'), so "<ns>/*"
// matches exactly the namespace's keys; the pattern relies on it.
func validateNamespace(ns string) error {
	if ns == "" || len(ns) > 63 {
		return fmt.Errorf("namespace %q: must be 1 to 63 characters", ns)
	}
	for i := range len(ns) {
		c := ns[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(ns)-1) {
			return fmt.Errorf("namespace %s: not a DNS label (lowercase letters, digits and inner '-' only), byte %d", strconv.Quote(ns), i)
		}
	}
	return nil
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl

import (
	"fmt"
	"strings"
)

// ControllerUser is the name the documentation gives the controller's
// Redis user (a store's controllerAuth); any name works.
const ControllerUser = "redlease-operator"

// ControllerModes is what the controller's user must be able to do,
// besides what every store needs: one per feature a user may do without,
// as a managed service that forbids CONFIG or ACL makes them.
type ControllerModes struct {
	// Guard lets the controller read and apply the replica guard
	// (safety.minReplicasToWrite, manageReplicaSettings) and preflight
	// read persistence: CONFIG GET and CONFIG SET.
	Guard bool
	// Isolation lets it provision tenant users (ClusterLockStore
	// tenants.isolation: ACL): ACL SETUSER, DELUSER, USERS, and COMMAND
	// INFO to find which commands the server has.
	Isolation bool
	// Cluster lets it discover a Redis Cluster: CLUSTER SHARDS (CLUSTER
	// NODES on servers before 7.0) and CLUSTER KEYSLOT. Naming CLUSTER
	// SHARDS fails ACL SETUSER before Redis 7.0.
	Cluster bool
	// Functions lets it load the protocol's function library on every
	// master of a store and check it on each probe: FUNCTION LIST and
	// FUNCTION LOAD (Redis 7.0 and later, Valkey). Without it the store's
	// FunctionsLoaded condition is False (FunctionsUnavailable), pods run
	// the scripts with EVALSHA and tenants keep EVAL.
	Functions bool
}

// controllerCommands are what the controller sends on every store: PING
// and INFO (the probe: role, replicas, run_id, server, maxmemory_policy,
// AOF), SELECT (db ≠ 0), and EVALSHA/EVAL of protocol's read,
// raise-fence and epoch-record scripts with the commands those scripts
// run, which Redis checks against the caller's ACL (lua/read.lua,
// lua/raise_fence.lua, lua/epoch_read.lua: HGET, EXISTS, HSET and HDEL for
// the failover quarantine's record; TestControllerRulesCoverItsScripts).
var controllerCommands = []string{
	"ping", "info", "select", "evalsha", "eval",
	"get", "type", "pttl", "time", "zcard", "zrangebyscore", "hmget", "hget", "set", "exists", "hset", "hdel",
}

var (
	guardCommands     = []string{"config|get", "config|set"}
	isolationCommands = []string{"acl|setuser", "acl|deluser", "acl|users", "command|info"}
	clusterCommands   = []string{"cluster|shards", "cluster|nodes", "cluster|keyslot"}
	functionsCommands = []string{"function|list", "function|load"}
)

// ControllerRules are the ACL SETUSER rules of the controller's user for
// modes, without username and password: every key (the controller reads
// any lock's key, holders and fence counter), no channel, and only the
// commands it sends.
//
// This is the one list of what the controller runs on Redis.
func ControllerRules(modes ControllerModes) []string {
	rules := []string{"~*", "resetchannels", "-@all"}
	allow := func(cmds []string) {
		for _, c := range cmds {
			rules = append(rules, "+"+c)
		}
	}
	allow(controllerCommands)
	if modes.Guard {
		allow(guardCommands)
	}
	if modes.Isolation {
		allow(isolationCommands)
	}
	if modes.Cluster {
		allow(clusterCommands)
	}
	if modes.Functions {
		allow(functionsCommands)
	}
	return rules
}

// ControllerSetUser is the redis-cli command that creates (or resets) the
// controller's user with password for modes, one line to paste:
// "ACL SETUSER redlease-operator reset on >PASSWORD ~* ...". Run it on
// every node: ACLs do not replicate.
func ControllerSetUser(password string, modes ControllerModes) (string, error) {
	if password == "" || strings.ContainsAny(password, " \t\r\n\"'") {
		return "", fmt.Errorf("redisacl: a controller password must be non-empty, without spaces or quotes")
	}
	return strings.Join(append([]string{"ACL", "SETUSER", ControllerUser, "reset", "on", ">" + password}, ControllerRules(modes)...), " "), nil
}

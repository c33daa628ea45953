/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
)

// The package's tests share one API server (it takes seconds to start).
func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

type obj = map[string]any

// list returns a JSON array; list() is [] (not null, which means absent).
func list(items ...any) []any { return append([]any{}, items...) }

// newLock returns an unstructured DistributedLock: the tables need values
// the Go types cannot hold (malformed durations, explicit zeros, []).
func newLock(ns, name string, spec obj) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{"spec": spec}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DistributedLock"))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func standalone() obj { return obj{"mode": "Standalone", "addresses": list("redis:6379")} }

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestInvalidRefused creates DistributedLocks the API server must refuse,
// and checks that the error names the field and explains the rule.
func TestInvalidRefused(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	svc := obj{"name": "redis", "port": 6379}
	secret := obj{"name": "redis-auth", "key": "password"}
	three := list("r-0:6379", "r-1:6379", "r-2:6379")
	store := obj{"kind": "ClusterLockStore", "name": "shared"}

	cases := []struct {
		name  string
		spec  obj
		field string // the field path the error is reported at
		msg   string // a substring of the message
	}{
		// Where the servers are, by mode.
		{"neither redis nor storeRef", obj{"ttl": "30s"},
			"spec", "set exactly one of storeRef (a LockStore or ClusterLockStore that holds the Redis settings) or redis (the servers, inline)"},
		{"mode missing", obj{"redis": obj{"addresses": list("redis:6379")}},
			"spec.redis.mode", "Required value"},
		{"unknown mode", obj{"redis": obj{"mode": "Master", "addresses": list("redis:6379")}},
			"spec.redis.mode", `supported values: "Standalone", "Replicated", "Sentinel", "Cluster", "Redlock"`},
		{"neither addresses nor service", obj{"redis": obj{"mode": "Replicated"}},
			"spec.redis", "set addresses or service to say where the Redis servers are"},
		{"addresses and service", obj{"redis": obj{"mode": "Replicated", "addresses": list("redis:6379"), "service": svc}},
			"spec.redis", "set either addresses or service, not both"},
		{"standalone with two addresses", obj{"redis": obj{"mode": "Standalone", "addresses": list("a:6379", "b:6379")}},
			"spec.redis.addresses", "Standalone mode takes exactly one address, not 2 (for a master with replicas use Replicated mode)"},
		{"standalone with no address", obj{"redis": obj{"mode": "Standalone", "addresses": list()}},
			"spec.redis.addresses", "Standalone mode takes exactly one address, not 0"},
		{"replicated with no address", obj{"redis": obj{"mode": "Replicated", "addresses": list()}},
			"spec.redis.addresses", "Replicated mode needs at least one address"},
		{"cluster with no seed", obj{"redis": obj{"mode": "Cluster", "addresses": list()}},
			"spec.redis.addresses", "Cluster mode needs at least one seed address"},
		{"cluster on database 3", obj{"redis": obj{"mode": "Cluster", "addresses": list("c:6379"), "db": 3}},
			"spec.redis.db", "Redis Cluster has only database 0, not 3"},
		{"database 16", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "db": 16}},
			"spec.redis.db", "less than or equal to 15"},
		{"FIFO on Redlock", obj{"fairness": "FIFO", "redis": obj{"mode": "Redlock", "addresses": three}},
			"spec.fairness", "fairness FIFO needs the waiting line, which Redlock does not have"},
		{"ticket order on Redlock", obj{"lineOrder": "Ticket", "redis": obj{"mode": "Redlock", "addresses": three}},
			"spec.lineOrder", "lineOrder Ticket orders the waiting line, which Redlock does not have"},
		{"unknown line order", obj{"lineOrder": "Random", "redis": standalone()},
			"spec.lineOrder", `supported values: "Clock", "Ticket"`},
		{"unknown fairness", obj{"fairness": "Random", "redis": standalone()},
			"spec.fairness", `supported values: "Default", "FIFO"`},
		{"permits on Redlock", obj{"permits": 3, "redis": obj{"mode": "Redlock", "addresses": three}},
			"spec.permits", "permits above 1 need one Redis deployment: on Redlock a majority of nodes per holder does not bound the holders"},
		{"no permits", obj{"permits": 0, "redis": standalone()},
			"spec.permits", "greater than or equal to 1"},
		{"too many permits", obj{"permits": 1001, "redis": standalone()},
			"spec.permits", "less than or equal to 1000"},
		{"redlock with one address", obj{"redis": obj{"mode": "Redlock", "addresses": list("r-0:6379")}},
			"spec.redis.addresses", "Redlock needs an odd number (3, 5, 7...) of independent nodes, not 1"},
		{"redlock with two addresses", obj{"redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379")}},
			"spec.redis.addresses", "Redlock needs an odd number (3, 5, 7...) of independent nodes, not 2"},
		{"redlock with four addresses", obj{"redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379", "r-3:6379")}},
			"spec.redis.addresses", "Redlock needs an odd number (3, 5, 7...) of independent nodes, not 4"},
		{"redlock with one address twice", obj{"redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-0:6379", "r-1:6379")}},
			"spec.redis.addresses[1]", "Duplicate value"},
		// Redlock's membership, and so its quorum, must not follow a
		// Service's ready endpoints (issue 10, item 2).
		{"redlock through a service", obj{"redis": obj{"mode": "Redlock", "service": svc}},
			"spec.redis.service", "Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names): a Service's endpoints change with pod IPs, so membership and quorum would change too"},
		{"redlock through a service with the old nodes field", obj{"redis": obj{"mode": "Redlock", "service": svc, "nodes": 5}},
			"spec.redis.service", "a Service's endpoints change with pod IPs, so membership and quorum would change too"},
		{"redlock without addresses", obj{"redis": obj{"mode": "Redlock"}},
			"spec.redis.addresses", "Redlock needs an explicit, odd list of ≥ 3 stable addresses"},
		{"sentinel mode without sentinel", obj{"redis": obj{"mode": "Sentinel"}},
			"spec.redis.sentinel", "Sentinel mode needs sentinel.masterName and sentinel.addresses"},
		{"sentinel mode with addresses", obj{"redis": obj{"mode": "Sentinel", "addresses": list("redis:6379"),
			"sentinel": obj{"masterName": "mymaster", "addresses": list("s:26379")}}},
			"spec.redis", "in Sentinel mode the servers are found through the sentinels"},
		{"sentinel mode with service", obj{"redis": obj{"mode": "Sentinel", "service": svc,
			"sentinel": obj{"masterName": "mymaster", "addresses": list("s:26379")}}},
			"spec.redis", "in Sentinel mode the servers are found through the sentinels"},
		{"sentinel outside sentinel mode", obj{"redis": obj{"mode": "Replicated", "addresses": list("redis:6379"),
			"sentinel": obj{"masterName": "mymaster", "addresses": list("s:26379")}}},
			"spec.redis.sentinel", "is only used in Sentinel mode (mode is Replicated)"},
		{"sentinel without addresses", obj{"redis": obj{"mode": "Sentinel", "sentinel": obj{"masterName": "mymaster", "addresses": list()}}},
			"spec.redis.sentinel.addresses", "at least 1 items"},
		{"sentinel without master name", obj{"redis": obj{"mode": "Sentinel", "sentinel": obj{"addresses": list("s:26379")}}},
			"spec.redis.sentinel.masterName", "Required value"},
		{"sentinel address without port", obj{"redis": obj{"mode": "Sentinel", "sentinel": obj{"masterName": "m", "addresses": list("sentinel")}}},
			"spec.redis.sentinel.addresses[0]", "must be host:port"},

		// Addresses and Service.
		{"address without port", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis")}},
			"spec.redis.addresses[0]", "must be host:port, e.g. redis-0.redis:6379"},
		{"address with port 70000", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:70000")}},
			"spec.redis.addresses[0]", "must be host:port"},
		{"address with port 0", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:0")}},
			"spec.redis.addresses[0]", "must be host:port"},
		{"address is a URL", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis://redis:6379")}},
			"spec.redis.addresses[0]", "must be host:port"},
		{"IPv6 address without brackets", obj{"redis": obj{"mode": "Standalone", "addresses": list("fd00::1:6379")}},
			"spec.redis.addresses[0]", "must be host:port"},
		{"service port 0", obj{"redis": obj{"mode": "Standalone", "service": obj{"name": "redis", "port": 0}}},
			"spec.redis.service.port", "greater than or equal to 1"},
		{"service port 65536", obj{"redis": obj{"mode": "Standalone", "service": obj{"name": "redis", "port": 65536}}},
			"spec.redis.service.port", "less than or equal to 65535"},
		{"service name not a DNS label", obj{"redis": obj{"mode": "Standalone", "service": obj{"name": "Redis_Main", "port": 6379}}},
			"spec.redis.service.name", "must be a Service name"},

		// Credentials and TLS.
		{"username without password", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "username": "locks"}},
			"spec.redis.passwordSecretRef", "username needs passwordSecretRef"},
		{"password secret without key", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": obj{"name": "auth"}}},
			"spec.redis.passwordSecretRef.key", "Required value"},
		{"password secret with a bad name", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": obj{"name": "Auth!", "key": "p"}}},
			"spec.redis.passwordSecretRef.name", "must be a Secret name"},
		{"CA without TLS", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "tls": obj{"caSecretRef": obj{"name": "ca", "key": "ca.crt"}}}},
			"spec.redis.tls", "caSecretRef, clientCertSecretRef, serverName and insecureSkipVerify need enabled: true"},
		{"client certificate without TLS", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "tls": obj{"clientCertSecretRef": obj{"name": "redis-client"}}}},
			"spec.redis.tls", "caSecretRef, clientCertSecretRef, serverName and insecureSkipVerify need enabled: true"},
		{"controllerAuth username without password", obj{"redis": standalone(), "controllerAuth": obj{"username": "redlease-operator"}},
			"spec.controllerAuth.passwordSecretRef", "username needs passwordSecretRef"},
		{"CA with TLS disabled", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "tls": obj{"enabled": false, "caSecretRef": obj{"name": "ca", "key": "ca.crt"}}}},
			"spec.redis.tls", "need enabled: true"},
		{"CA and insecureSkipVerify", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "tls": obj{"enabled": true, "insecureSkipVerify": true, "caSecretRef": obj{"name": "ca", "key": "ca.crt"}}}},
			"spec.redis.tls.insecureSkipVerify", "caSecretRef would be ignored"},

		// Durations.
		{"ttl below 100ms", obj{"ttl": "50ms", "redis": standalone()},
			"spec.ttl", "must be between 100ms and 24h"},
		{"ttl above 24h", obj{"ttl": "25h", "redis": standalone()},
			"spec.ttl", "must be between 100ms and 24h"},
		{"ttl zero", obj{"ttl": "0s", "redis": standalone()},
			"spec.ttl", "must be between 100ms and 24h"},
		{"ttl not a duration", obj{"ttl": "thirty seconds", "redis": standalone()},
			"spec.ttl", "must be a duration such as 30s"},
		{"ttl in days", obj{"ttl": "1d", "redis": standalone()},
			"spec.ttl", "must be a duration such as 30s"},
		{"ttl negative", obj{"ttl": "-30s", "redis": standalone()},
			"spec.ttl", "must be a duration such as 30s"},
		// 2 × renewInterval ≤ 0.99 × ttl − 2ms (issue 10, item 8); the
		// message names both durations and the longest renewInterval the
		// ttl allows.
		{"renewInterval equal to ttl", obj{"ttl": "10s", "renewInterval": "10s", "redis": standalone()},
			"spec.renewInterval", "must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms, and renewInterval 10s is too long for ttl 10s, which allows up to 4.949s"},
		{"renewInterval above the default ttl", obj{"renewInterval": "1m", "redis": standalone()},
			"spec.renewInterval", "renewInterval 1m is too long for ttl 30s, which allows up to 14.849s"},
		{"renewInterval just shorter than ttl", obj{"ttl": "30s", "renewInterval": "29s", "redis": standalone()},
			"spec.renewInterval", "must leave room for a renewal inside the lease"},
		{"renewInterval 1ns past the bound for ttl 30s", obj{"ttl": "30s", "renewInterval": "14.849000001s", "redis": standalone()},
			"spec.renewInterval", "must leave room for a renewal inside the lease"},
		{"renewInterval half the default ttl", obj{"renewInterval": "15s", "redis": standalone()},
			"spec.renewInterval", "must leave room for a renewal inside the lease"},
		{"renewInterval past the bound for the shortest ttl", obj{"ttl": "100ms", "renewInterval": "48500001ns", "redis": standalone()},
			"spec.renewInterval", "renewInterval 48500001ns is too long for ttl 100ms, which allows up to 48.500ms"},
		{"renewInterval past the bound for the longest ttl", obj{"ttl": "24h", "renewInterval": "11h52m48s", "redis": standalone()},
			"spec.renewInterval", "renewInterval 11h52m48s is too long for ttl 24h, which allows up to 42767.999s"},
		{"renewInterval past the bound for a ttl in microseconds", obj{"ttl": "1.0001s", "renewInterval": "1s", "redis": standalone()},
			"spec.renewInterval", "renewInterval 1s is too long for ttl 1.0001s, which allows up to 494.049ms"},
		{"renewInterval with a ttl too short for any", obj{"ttl": "1ms", "renewInterval": "10ms", "redis": standalone()},
			"spec.renewInterval", "renewInterval 10ms is too long for ttl 1ms, which leaves no room for any renewal"},
		{"renewInterval of 100000h", obj{"ttl": "1h", "renewInterval": "100000h", "redis": standalone()},
			"spec.renewInterval", "must leave room for a renewal inside the lease"},
		{"renewInterval below 10ms", obj{"renewInterval": "1ms", "redis": standalone()},
			"spec.renewInterval", "must be at least 10ms"},
		{"renewInterval not a duration", obj{"renewInterval": "often", "redis": standalone()},
			"spec.renewInterval", "must be a duration such as 10s"},
		// maxHold > ttl (the acquisition alone holds the key for ttl), at
		// most 24h; the message names both durations.
		{"maxHold equal to ttl", obj{"ttl": "10s", "maxHold": "10s", "redis": standalone()},
			"spec.maxHold", "must be longer than ttl (maxHold 10s, ttl 10s): the acquisition alone holds the lock for ttl, so a cap no longer than that would never let a renewal happen"},
		{"maxHold shorter than ttl", obj{"ttl": "1m", "maxHold": "30s", "redis": standalone()},
			"spec.maxHold", "must be longer than ttl (maxHold 30s, ttl 1m)"},
		{"maxHold not above the default ttl", obj{"maxHold": "30000ms", "redis": standalone()},
			"spec.maxHold", "must be longer than ttl (maxHold 30000ms, ttl 30s)"},
		{"maxHold above 24h", obj{"ttl": "1h", "maxHold": "24h0m0.001s", "redis": standalone()},
			"spec.maxHold", "must be at most 24h"},
		{"maxHold of 100000h", obj{"maxHold": "100000h", "redis": standalone()},
			"spec.maxHold", "must be at most 24h"},
		{"maxHold not a duration", obj{"maxHold": "an hour", "redis": standalone()},
			"spec.maxHold", "must be a duration such as 30m"},
		{"maxHold negative", obj{"maxHold": "-1h", "redis": standalone()},
			"spec.maxHold", "must be a duration such as 30m"},

		// Replica guards.
		{"max lag not whole seconds", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"minReplicasToWrite": 1, "minReplicasMaxLag": "1500ms"}},
			"spec.safety.minReplicasMaxLag", "must be a whole number of seconds"},
		{"max lag zero", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"minReplicasToWrite": 1, "minReplicasMaxLag": "0s"}},
			"spec.safety.minReplicasMaxLag", "must be between 1s and 1h"},
		{"max lag over an hour", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"minReplicasToWrite": 1, "minReplicasMaxLag": "2h"}},
			"spec.safety.minReplicasMaxLag", "must be between 1s and 1h"},
		{"negative minReplicasToWrite", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"minReplicasToWrite": -1}},
			"spec.safety.minReplicasToWrite", "greater than or equal to 0"},
		{"negative waitForReplicas", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"waitForReplicas": -1}},
			"spec.safety.waitForReplicas", "greater than or equal to 0"},
		{"replica guard on standalone", obj{"redis": standalone(), "safety": obj{"minReplicasToWrite": 1}},
			"spec.safety.minReplicasToWrite", "replica guards need replicas: use them with Replicated, Sentinel or Cluster mode, not Standalone"},
		{"replica guard on redlock", obj{"redis": obj{"mode": "Redlock", "addresses": three}, "safety": obj{"minReplicasToWrite": 1}},
			"spec.safety.minReplicasToWrite", "Cluster mode, not Redlock (Standalone and Redlock servers run without replicas)"},
		{"waitForReplicas on standalone", obj{"redis": standalone(), "safety": obj{"waitForReplicas": 1}},
			"spec.safety.waitForReplicas", "waiting for replicas needs replicas: use it with Replicated, Sentinel or Cluster mode, not Standalone"},
		{"waitForReplicas on redlock", obj{"redis": obj{"mode": "Redlock", "addresses": three}, "safety": obj{"waitForReplicas": 1}},
			"spec.safety.waitForReplicas", "waiting for replicas needs replicas: use it with Replicated, Sentinel or Cluster mode, not Redlock"},
		{"manageReplicaSettings without a value", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"manageReplicaSettings": true}},
			"spec.safety.minReplicasToWrite", "manageReplicaSettings needs minReplicasToWrite of 1 or more"},
		{"manageReplicaSettings with zero", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"manageReplicaSettings": true, "minReplicasToWrite": 0}},
			"spec.safety.minReplicasToWrite", "manageReplicaSettings needs minReplicasToWrite of 1 or more"},

		// Failover quarantine.
		{"failover quarantine on redlock", obj{"redis": obj{"mode": "Redlock", "addresses": three}, "safety": obj{"failoverQuarantine": true}},
			"spec.safety.failoverQuarantine", "the failover quarantine does not apply to Redlock"},
		{"failover quarantine on replicated without a guard", obj{"redis": obj{"mode": "Replicated", "addresses": three}, "safety": obj{"failoverQuarantine": true}},
			"spec.safety.failoverQuarantine", "the failover quarantine on Replicated needs the replica guard managed: set safety.manageReplicaSettings true and safety.minReplicasToWrite to the number of replicas"},
		{"failover quarantine on sentinel with a guard only checked", obj{"redis": obj{"mode": "Sentinel", "sentinel": obj{"masterName": "m", "addresses": list("s:26379")}},
			"safety": obj{"failoverQuarantine": true, "minReplicasToWrite": 2}},
			"spec.safety.failoverQuarantine", "the failover quarantine on Sentinel needs the replica guard managed"},
		{"failover quarantine on cluster with waitForReplicas only", obj{"redis": obj{"mode": "Cluster", "addresses": list("c:6379")}, "safety": obj{"failoverQuarantine": true, "waitForReplicas": 1}},
			"spec.safety.failoverQuarantine", "a partitioned old master that keeps one replica goes on granting"},

		// Key.
		{"key with a space", obj{"key": "nightly settlement", "redis": standalone()},
			"spec.key", "must not contain whitespace or control characters"},
		{"key with a newline", obj{"key": "settlement\n", "redis": standalone()},
			"spec.key", "must not contain whitespace or control characters"},
		{"key with a no-break space", obj{"key": "nightly\u00a0settlement", "redis": standalone()},
			"spec.key", "must not contain whitespace or control characters"},
		{"key with a hash tag", obj{"key": "{billing}settlement", "redis": standalone()},
			"spec.key", "must not contain '{' or '}'"},
		{"empty key", obj{"key": "", "redis": standalone()},
			"spec.key", "at least 1 chars long"},
		{"key of 513 characters", obj{"key": strings.Repeat("k", 513), "redis": standalone()},
			"spec.key", "may not be more than 512 bytes"},
		{"key of 300 characters but 600 bytes", obj{"key": strings.Repeat("é", 300), "redis": standalone()},
			"spec.key", "must be at most 512 bytes long (UTF-8)"},
		{"username with a space", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "username": "lock user", "passwordSecretRef": secret}},
			"spec.redis.username", "must not contain whitespace"},

		// The credentials Secret's name (issue 41): a Secret name, never
		// a derived one (another store's or inline lock's), never a
		// Secret the inline lock itself reads.
		{"credentials Secret with capitals", obj{"credentialsSecretName": "Billing-Redis", "storeRef": store},
			"spec.credentialsSecretName", "must be a Secret name: lower-case letters, digits, '-' and '.'"},
		{"credentials Secret with a slash", obj{"credentialsSecretName": "billing/redis", "storeRef": store},
			"spec.credentialsSecretName", "must be a Secret name"},
		{"credentials Secret ending in a dash", obj{"credentialsSecretName": "billing-", "storeRef": store},
			"spec.credentialsSecretName", "must be a Secret name"},
		{"credentials Secret of 254 characters", obj{"credentialsSecretName": strings.Repeat("s", 254), "storeRef": store},
			"spec.credentialsSecretName", "may not be more than 253"},
		{"empty credentials Secret", obj{"credentialsSecretName": "", "storeRef": store},
			"spec.credentialsSecretName", "at least 1 chars long"},
		{"credentials Secret under the derived prefix", obj{"credentialsSecretName": "redlease-shared", "storeRef": store},
			"spec.credentialsSecretName", "must not start with 'redlease-': that prefix is reserved for the names the controller derives"},
		{"credentials Secret named like another inline lock's", obj{"credentialsSecretName": "redlease-lock-other", "redis": standalone()}, //nolint:gosec // G101: a Secret name, not a credential
			"spec.credentialsSecretName", "that prefix is reserved"},
		{"credentials Secret that is the lock's password Secret", obj{"credentialsSecretName": "redis-auth",
			"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": secret}},
			"spec.credentialsSecretName", `names "redis-auth", a Secret this lock reads (spec.redis or spec.controllerAuth): the controller writes the credentials Secret itself and never overwrites one it did not write`},
		{"credentials Secret that is the lock's CA", obj{"credentialsSecretName": "redis-ca",
			"redis": obj{"mode": "Standalone", "addresses": list("redis:6380"), "tls": obj{"enabled": true, "caSecretRef": obj{"name": "redis-ca", "key": "ca.crt"}}}},
			"spec.credentialsSecretName", `names "redis-ca", a Secret this lock reads`},
		{"credentials Secret that is the controller's password Secret", obj{"credentialsSecretName": "redis-admin",
			"redis": standalone(), "controllerAuth": obj{"passwordSecretRef": obj{"name": "redis-admin", "key": "password"}}},
			"spec.credentialsSecretName", `names "redis-admin", a Secret this lock reads`},
		{"credentials Secret that is the sentinels' password Secret", obj{"credentialsSecretName": "sentinel-auth",
			"redis": obj{"mode": "Sentinel", "sentinel": obj{"masterName": "m", "addresses": list("s-0:26379"), "passwordSecretRef": obj{"name": "sentinel-auth", "key": "password"}}}},
			"spec.credentialsSecretName", `names "sentinel-auth", a Secret this lock reads`},
	}
	if len(cases) < 25 {
		t.Fatalf("only %d invalid cases", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(timeout(t), newLock(ns, fmt.Sprintf("invalid-%d", i), tc.spec))
			if err == nil {
				t.Fatalf("created; want refused at %s with %q", tc.field, tc.msg)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid (422): %v", err)
			}
			text := err.Error()
			t.Log(text)
			if !strings.Contains(text, tc.field+": ") {
				t.Errorf("error does not name %s:\n%s", tc.field, text)
			}
			if !strings.Contains(text, tc.msg) {
				t.Errorf("error does not say %q:\n%s", tc.msg, text)
			}
			// A rule that fails to evaluate (a malformed duration reaching
			// duration()) shows CEL internals instead of a message.
			for _, bad := range []string{"error evaluating", "no such key", "no such overload", "conversion error"} {
				if strings.Contains(text, bad) {
					t.Errorf("error shows a CEL evaluation failure (%q):\n%s", bad, text)
				}
			}
		})
	}
}

// TestValidAccepted creates DistributedLocks the API server must accept.
func TestValidAccepted(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	secret := obj{"name": "redis-auth", "key": "password"}
	cases := []struct {
		name string
		spec obj
	}{
		{"minimal standalone", obj{"redis": standalone()}},
		{"standalone through a service", obj{"redis": obj{"mode": "Standalone", "service": obj{"name": "redis", "port": 6379}}}},
		{"standalone on an IPv4 address, db 15", obj{"redis": obj{"mode": "Standalone", "addresses": list("10.0.0.7:6379"), "db": 15}}},
		{"standalone on an IPv6 address", obj{"redis": obj{"mode": "Standalone", "addresses": list("[fd00::7]:6379")}}},
		{"shortest ttl, shortest renewal", obj{"ttl": "100ms", "renewInterval": "10ms", "redis": standalone()}},
		{"FIFO", obj{"fairness": "FIFO", "redis": standalone()}},
		{"a semaphore of 3", obj{"permits": 3, "redis": standalone()}},
		{"a semaphore of 1000 on a Cluster", obj{"permits": 1000, "redis": obj{"mode": "Cluster", "addresses": list("c:6379")}}},
		{"one permit on Redlock", obj{"permits": 1, "redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379")}}},
		{"default fairness on Redlock", obj{"fairness": "Default", "redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379")}}},
		{"longest ttl, longest renewal", obj{"ttl": "24h", "renewInterval": "11h52m47.999s", "redis": standalone()}},
		{"renewal at the bound for ttl 30s", obj{"ttl": "30s", "renewInterval": "14.849s", "redis": standalone()}},
		{"renewal at the bound for the default ttl", obj{"renewInterval": "14849ms", "redis": standalone()}},
		{"renewal at the bound for the shortest ttl", obj{"ttl": "100ms", "renewInterval": "48.5ms", "redis": standalone()}},
		{"fractional durations", obj{"ttl": "1.5s", "renewInterval": "333.333333ms", "redis": standalone()}},
		{"renewal in microseconds", obj{"ttl": "100ms", "renewInterval": "33333µs", "redis": standalone()}},
		{"maxHold just above ttl", obj{"ttl": "10s", "maxHold": "10.001s", "redis": standalone()}},
		{"maxHold above the default ttl", obj{"maxHold": "31s", "redis": standalone()}},
		{"maxHold of 24h", obj{"ttl": "1h", "maxHold": "24h", "redis": standalone()}},
		{"maxHold in minutes on a semaphore", obj{"maxHold": "90m", "permits": 3, "redis": standalone()}},
		{"key of 512 bytes", obj{"key": strings.Repeat("k", 512), "redis": standalone()}},
		{"unicode key", obj{"key": "billing/расчёт/結算", "redis": standalone()}},
		{"fencing disabled", obj{"redis": standalone(), "fencing": obj{"enabled": false}}},
		{"username and password", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "username": "locks", "passwordSecretRef": secret}}},
		{"TLS with CA and server name", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6380"),
			"tls": obj{"enabled": true, "caSecretRef": obj{"name": "redis-ca", "key": "ca.crt"}, "serverName": "redis.cache.svc"}}}},
		{"TLS without verification", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6380"), "tls": obj{"enabled": true, "insecureSkipVerify": true}}}},
		{"TLS off, said explicitly", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "tls": obj{"enabled": false}}}},
		{"failover quarantine on standalone", obj{"redis": standalone(), "safety": obj{"failoverQuarantine": true}}},
		{"failover quarantine on a semaphore", obj{"permits": 2, "redis": standalone(), "safety": obj{"failoverQuarantine": true}}},
		{"failover quarantine on replicated with the guard managed", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6379")},
			"safety": obj{"failoverQuarantine": true, "minReplicasToWrite": 2, "minReplicasMaxLag": "1s", "manageReplicaSettings": true}}},
		{"failover quarantine on cluster with the guard managed", obj{"redis": obj{"mode": "Cluster", "addresses": list("c:6379")},
			"safety": obj{"failoverQuarantine": true, "minReplicasToWrite": 1, "manageReplicaSettings": true}}},
		{"failover quarantine on a store", obj{"storeRef": obj{"kind": "LockStore", "name": "redis"}, "safety": obj{"failoverQuarantine": true, "waitForReplicas": 1}}},
		{"replicated with every guard", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6379", "r-1:6379")},
			"safety": obj{"minReplicasToWrite": 1, "minReplicasMaxLag": "1m", "manageReplicaSettings": true, "waitForReplicas": 1}}},
		{"replicated through a service, wait only", obj{"redis": obj{"mode": "Replicated", "service": obj{"name": "redis", "port": 6379}},
			"safety": obj{"waitForReplicas": 2}}},
		{"replicated, guard checked not managed", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6379")},
			"safety": obj{"minReplicasToWrite": 2, "minReplicasMaxLag": "1h", "manageReplicaSettings": false}}},
		{"sentinel with its own credentials and TLS", obj{"redis": obj{"mode": "Sentinel",
			"sentinel":          obj{"masterName": "mymaster", "addresses": list("s-0:26379", "s-1:26379", "s-2:26379"), "username": "sentinel-user", "passwordSecretRef": obj{"name": "sentinel-auth", "key": "password"}},
			"passwordSecretRef": secret, "tls": obj{"enabled": true}, "db": 2},
			"safety": obj{"minReplicasToWrite": 1, "waitForReplicas": 1}}},
		{"cluster with seeds", obj{"redis": obj{"mode": "Cluster", "addresses": list("c-0:6379", "c-1:6379"), "db": 0},
			"safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true}}},
		{"cluster through a service", obj{"redis": obj{"mode": "Cluster", "service": obj{"name": "redis-cluster", "port": 6379}}}},
		{"redlock on three addresses", obj{"redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379")}}},
		{"redlock on five addresses", obj{"redis": obj{"mode": "Redlock", "addresses": list("a:6379", "b:6379", "c:6379", "d:6379", "e:6379")}}},
		{"redlock on seven StatefulSet names", obj{"redis": obj{"mode": "Redlock", "addresses": list(
			"redlock-0.redlock:6379", "redlock-1.redlock:6379", "redlock-2.redlock:6379", "redlock-3.redlock:6379",
			"redlock-4.redlock:6379", "redlock-5.redlock:6379", "redlock-6.redlock:6379")}}},
		{"ticket order on a store", obj{"lineOrder": "Ticket", "storeRef": obj{"kind": "LockStore", "name": "redis"}}},
		{"clock order on Redlock", obj{"lineOrder": "Clock", "redis": obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379")}}},
		{"explicit zero replica counts on standalone", obj{"redis": standalone(), "safety": obj{"minReplicasToWrite": 0, "waitForReplicas": 0}}},
		{"credentials Secret on a store", obj{"credentialsSecretName": "billing-redis", "storeRef": obj{"kind": "ClusterLockStore", "name": "shared"}}},
		{"credentials Secret of 253 characters with dots", obj{"credentialsSecretName": strings.Repeat("a.", 126) + "b", "storeRef": obj{"kind": "LockStore", "name": "redis"}}},
		{"credentials Secret beside the Secrets an inline lock reads", obj{"credentialsSecretName": "settlement-redis",
			"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": secret}, "controllerAuth": obj{"passwordSecretRef": obj{"name": "redis-admin", "key": "password"}}}},
		{"credentials Secret containing the reserved prefix later", obj{"credentialsSecretName": "billing-redlease-redis", "redis": standalone()}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := env.Client.Create(timeout(t), newLock(ns, fmt.Sprintf("valid-%d", i), tc.spec)); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestTypedObjectsAccepted creates DistributedLocks from the Go types: what
// a Go client sends (omitempty, Duration.String) must pass validation too.
func TestTypedObjectsAccepted(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	cases := []struct {
		name string
		spec v1alpha1.DistributedLockSpec
	}{
		{"zero values left out", v1alpha1.DistributedLockSpec{
			Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"redis:6379"}},
		}},
		{"durations from Go", v1alpha1.DistributedLockSpec{
			TTL:           &metav1.Duration{Duration: 90 * time.Second},
			RenewInterval: &metav1.Duration{Duration: 90 * time.Second / 3},
			Redis:         v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"redis:6379"}},
		}},
		{"sub-second durations from Go", v1alpha1.DistributedLockSpec{
			TTL:           &metav1.Duration{Duration: 100 * time.Millisecond},
			RenewInterval: &metav1.Duration{Duration: 100 * time.Millisecond / 3},
			MaxHold:       &metav1.Duration{Duration: 100*time.Millisecond + time.Nanosecond},
			Redis:         v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"redis:6379"}},
		}},
		{"every field", v1alpha1.DistributedLockSpec{
			Key:           "billing/settlement",
			TTL:           &metav1.Duration{Duration: time.Minute},
			RenewInterval: &metav1.Duration{Duration: 20 * time.Second},
			MaxHold:       &metav1.Duration{Duration: 2*time.Hour + 30*time.Minute},
			Redis: v1alpha1.RedisSpec{
				Mode:              v1alpha1.RedisModeReplicated,
				Addresses:         []string{"redis-0.redis:6379", "redis-1.redis:6379"},
				Username:          "locks",
				PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "redis-auth", Key: "password"},
				TLS: &v1alpha1.TLSSpec{Enabled: true, ServerName: "redis",
					CASecretRef: &v1alpha1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}},
				DB: 1,
			},
			Safety: &v1alpha1.SafetySpec{
				MinReplicasToWrite:    1,
				MinReplicasMaxLag:     &metav1.Duration{Duration: 5 * time.Second},
				ManageReplicaSettings: true,
				WaitForReplicas:       1,
			},
			Fencing: &v1alpha1.FencingSpec{Enabled: ptr.To(false)},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dl := &v1alpha1.DistributedLock{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("typed-%d", i)},
				Spec:       tc.spec,
			}
			if err := env.Client.Create(timeout(t), dl); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestSamplesAccepted creates every sample of config/samples, and checks
// that kustomization.yaml lists them all, that every mode has an inline
// DistributedLock and a store, and that each kind of store has one with a
// lock on it. The workload samples in its subdirectories (a CronJob, an
// active/standby Deployment: several objects per file, of any kind) are
// created too, with strict field validation, and the stores their locks
// name must be samples.
func TestSamplesAccepted(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	samples := os.DirFS(filepath.Join(root, "config", "samples"))
	b, err := fs.ReadFile(samples, "kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := fs.Glob(samples, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range files {
		if base != "kustomization.yaml" && !slices.Contains(kust.Resources, base) {
			t.Errorf("%s is not listed in config/samples/kustomization.yaml", base)
		}
	}

	cov := sampleCoverage{modes: map[v1alpha1.RedisMode]bool{}, storeModes: map[v1alpha1.RedisMode]bool{},
		stores: map[v1alpha1.StoreReference]bool{}, locksOn: map[v1alpha1.StoreReference]bool{}}
	for _, name := range kust.Resources {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(samples, name)
			if err != nil {
				t.Fatal(err)
			}
			cov.create(t, env.Client, ns, b)
		})
	}
	workloads, err := fs.Glob(samples, "*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(workloads) == 0 {
		t.Error("no workload samples in config/samples/*/")
	}
	for _, name := range workloads {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(samples, name)
			if err != nil {
				t.Fatal(err)
			}
			cov.createWorkload(t, env.Client, ns, b)
		})
	}
	cov.check(t)
}

// createWorkload creates every object of the multi-document sample b in
// ns, the API server refusing unknown fields; DistributedLocks go through
// create, for their Go types and coverage.
func (cov *sampleCoverage) createWorkload(t *testing.T, c client.Client, ns string, b []byte) {
	t.Helper()
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("not YAML: %v", err)
		}
		if len(u.Object) == 0 {
			continue // comments only
		}
		if u.GetAPIVersion() == v1alpha1.GroupVersion.String() {
			cov.create(t, c, ns, []byte(doc))
			continue
		}
		u.SetNamespace(ns)
		if err := c.Create(timeout(t), u, client.FieldValidation("Strict")); err != nil {
			t.Fatalf("%s %s refused: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// sampleCoverage is what the samples of config/samples cover.
type sampleCoverage struct {
	modes      map[v1alpha1.RedisMode]bool      // of inline locks
	storeModes map[v1alpha1.RedisMode]bool      // of stores
	stores     map[v1alpha1.StoreReference]bool // the samples' stores
	locksOn    map[v1alpha1.StoreReference]bool // the stores the samples' locks name
}

// create checks that the sample b matches the Go types of its kind,
// creates it (in ns unless it is cluster-scoped) and records what it covers.
func (cov *sampleCoverage) create(t *testing.T, c client.Client, ns string, b []byte) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	if u.GetAPIVersion() != v1alpha1.GroupVersion.String() {
		t.Fatalf("apiVersion %q, want %s", u.GetAPIVersion(), v1alpha1.GroupVersion)
	}
	var typed client.Object
	switch kind := u.GetKind(); kind {
	case "DistributedLock":
		typed = &v1alpha1.DistributedLock{}
	case "LockStore":
		typed = &v1alpha1.LockStore{}
	case "ClusterLockStore":
		typed = &v1alpha1.ClusterLockStore{}
	case "LockRelease": // a break-glass request (config/samples/breakglass)
		typed = &v1alpha1.LockRelease{}
	default:
		t.Fatalf("unexpected kind %q", kind)
	}
	if err := yaml.UnmarshalStrict(b, typed); err != nil {
		t.Fatalf("does not match the Go types: %v", err)
	}
	switch o := typed.(type) {
	case *v1alpha1.DistributedLock:
		if o.Spec.StoreRef != nil {
			cov.locksOn[*o.Spec.StoreRef] = true
		} else {
			cov.modes[o.Spec.Redis.Mode] = true
		}
	case *v1alpha1.LockStore:
		cov.stores[v1alpha1.StoreReference{Kind: v1alpha1.StoreKindLockStore, Name: o.Name}] = true
		cov.storeModes[o.Spec.Redis.Mode] = true
	case *v1alpha1.ClusterLockStore:
		cov.stores[v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: o.Name}] = true
		cov.storeModes[o.Spec.Redis.Mode] = true
	}
	if u.GetKind() == "ClusterLockStore" {
		if u.GetNamespace() != "" {
			t.Errorf("a ClusterLockStore has no namespace (got %q)", u.GetNamespace())
		}
		deleteWhenDone(t, c, u)
	} else {
		u.SetNamespace(ns)
	}
	if err := c.Create(timeout(t), u); err != nil {
		t.Fatalf("refused: %v", err)
	}
}

// check: an inline lock and a store per mode, a store of each kind, a lock on every
// store and every store a lock names.
func (cov *sampleCoverage) check(t *testing.T) {
	t.Helper()
	for _, m := range []v1alpha1.RedisMode{v1alpha1.RedisModeStandalone, v1alpha1.RedisModeReplicated,
		v1alpha1.RedisModeSentinel, v1alpha1.RedisModeCluster, v1alpha1.RedisModeRedlock} {
		if !cov.modes[m] {
			t.Errorf("no inline DistributedLock sample for mode %s", m)
		}
		if !cov.storeModes[m] {
			t.Errorf("no store sample for mode %s", m)
		}
	}
	kinds := map[v1alpha1.StoreKind]bool{}
	for ref := range cov.stores {
		kinds[ref.Kind] = true
		if !cov.locksOn[ref] {
			t.Errorf("no DistributedLock sample on the %s sample %s", ref.Kind, ref.Name)
		}
	}
	for _, k := range []v1alpha1.StoreKind{v1alpha1.StoreKindLockStore, v1alpha1.StoreKindClusterLockStore} {
		if !kinds[k] {
			t.Errorf("no %s sample", k)
		}
	}
	for ref := range cov.locksOn {
		if !cov.stores[ref] {
			t.Errorf("a DistributedLock sample names %s %s, which is not a sample", ref.Kind, ref.Name)
		}
	}
}

// deleteWhenDone deletes a cluster-scoped object when t ends: namespaced
// objects go with the test's namespace, these would outlive it.
func deleteWhenDone(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	})
}

// TestDefaults checks the schema defaults the API server applies.
func TestDefaults(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	cases := []struct {
		name  string
		spec  obj
		check func(t *testing.T, s v1alpha1.DistributedLockSpec)
	}{
		{"minimal", obj{"redis": standalone()}, checkMinimalDefaults},
		{"empty fencing", obj{"redis": standalone(), "fencing": obj{}}, func(t *testing.T, s v1alpha1.DistributedLockSpec) {
			if !s.FencingEnabled() || s.Fencing.Enabled == nil {
				t.Errorf("fencing = %+v, want enabled: true", s.Fencing)
			}
		}},
		{"fencing off stays off", obj{"redis": standalone(), "fencing": obj{"enabled": false}}, func(t *testing.T, s v1alpha1.DistributedLockSpec) {
			if s.FencingEnabled() {
				t.Errorf("fencing = %+v, want enabled: false", s.Fencing)
			}
		}},
		{"ttl given", obj{"ttl": "5s", "redis": standalone()}, func(t *testing.T, s v1alpha1.DistributedLockSpec) {
			if s.TTLOrDefault() != 5*time.Second {
				t.Errorf("ttl = %v, want 5s", s.TTL)
			}
		}},
		{"safety lag", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6379")}, "safety": obj{"minReplicasToWrite": 1}},
			func(t *testing.T, s v1alpha1.DistributedLockSpec) {
				if s.Safety.MinReplicasMaxLag == nil || s.Safety.MinReplicasMaxLag.Duration != 10*time.Second {
					t.Errorf("minReplicasMaxLag = %v, want 10s", s.Safety.MinReplicasMaxLag)
				}
				if s.Safety.ManageReplicaSettings || s.Safety.WaitForReplicas != 0 {
					t.Errorf("safety = %+v, want manageReplicaSettings false and no wait", s.Safety)
				}
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			name := fmt.Sprintf("defaults-%d", i)
			if err := env.Client.Create(ctx, newLock(ns, name, tc.spec)); err != nil {
				t.Fatalf("refused: %v", err)
			}
			var got v1alpha1.DistributedLock
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
				t.Fatal(err)
			}
			tc.check(t, got.Spec)
		})
	}
}

// checkMinimalDefaults checks the defaults of a spec that names only its
// Redis: a 30s TTL (v1alpha1.DefaultTTL), fencing on, one permit (a lock),
// nothing else set.
func checkMinimalDefaults(t *testing.T, s v1alpha1.DistributedLockSpec) {
	t.Helper()
	if s.Permits != 1 || s.Semaphore() {
		t.Errorf("permits = %d, want 1 (a lock)", s.Permits)
	}
	if s.TTL == nil || s.TTL.Duration != 30*time.Second {
		t.Errorf("ttl = %v, want 30s", s.TTL)
	}
	if s.TTL != nil && s.TTL.Duration != v1alpha1.DefaultTTL {
		t.Errorf("schema default ttl %v != v1alpha1.DefaultTTL %v", s.TTL.Duration, v1alpha1.DefaultTTL)
	}
	if s.Fencing == nil || s.Fencing.Enabled == nil || !*s.Fencing.Enabled {
		t.Errorf("fencing = %+v, want enabled: true", s.Fencing)
	}
	if !s.FencingEnabled() {
		t.Errorf("FencingEnabled() = false")
	}
	if s.Key != "" || s.RenewInterval != nil || s.Safety != nil {
		t.Errorf("key %q, renewInterval %v, safety %+v: want them absent (computed where used)", s.Key, s.RenewInterval, s.Safety)
	}
	if s.Redis.DB != 0 || s.Redis.TLS != nil || s.Redis.PasswordSecretRef != nil {
		t.Errorf("redis = %+v: want no db, tls or password", s.Redis)
	}
}

// TestGoHelpers checks the helpers on objects that never met the API server.
func TestGoHelpers(t *testing.T) {
	if s := (v1alpha1.DistributedLockSpec{}); s.PermitsOrDefault() != 1 || s.Semaphore() {
		t.Errorf("an unset permits is %d, semaphore %v; want 1, a lock", s.PermitsOrDefault(), s.Semaphore())
	}
	if s := (v1alpha1.DistributedLockSpec{Permits: 3}); s.PermitsOrDefault() != 3 || !s.Semaphore() {
		t.Errorf("permits 3 is %d, semaphore %v", s.PermitsOrDefault(), s.Semaphore())
	}
	for ttl, want := range map[time.Duration]time.Duration{
		30 * time.Second:       14849 * time.Millisecond,
		100 * time.Millisecond: 48500 * time.Microsecond,
		10 * time.Second:       4949 * time.Millisecond,
		24 * time.Hour:         11*time.Hour + 52*time.Minute + 47999*time.Millisecond,
		2 * time.Millisecond:   0,
	} {
		if got := v1alpha1.MaxRenewInterval(ttl); got != want {
			t.Errorf("MaxRenewInterval(%v) = %v, want %v", ttl, got, want)
		}
		if got := v1alpha1.MaxRenewInterval(ttl); got > 0 && 2*got > ttl-ttl/100-2*time.Millisecond {
			t.Errorf("MaxRenewInterval(%v) = %v breaks 2 × renewInterval ≤ 0.99 × ttl − 2ms", ttl, got)
		}
	}
	var s v1alpha1.DistributedLockSpec
	if s.TTLOrDefault() != 30*time.Second || !s.FencingEnabled() {
		t.Errorf("zero spec: TTLOrDefault %v FencingEnabled %v, want 30s true", s.TTLOrDefault(), s.FencingEnabled())
	}
	s.Fencing = &v1alpha1.FencingSpec{}
	if !s.FencingEnabled() {
		t.Errorf("fencing {}: FencingEnabled false, want true")
	}
	s.Fencing.Enabled = ptr.To(false)
	if s.FencingEnabled() {
		t.Errorf("fencing {enabled: false}: FencingEnabled true")
	}
}

// TestRenewIntervalMessageAgreesWithGo: the longest renewInterval the
// API server's refusal names for a ttl (computed in CEL) is
// MaxRenewInterval's (truncated to the microsecond the message shows), and
// the API server accepts that advice.
func TestRenewIntervalMessageAgreesWithGo(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	allows := regexp.MustCompile(`which allows up to ([0-9.]+(?:s|ms))$`)
	for i, ttl := range []string{"100ms", "1.0001s", "7.5s", "10s", "30s", "1h", "24h"} {
		t.Run(ttl, func(t *testing.T) {
			err := env.Client.Create(timeout(t), newLock(ns, fmt.Sprintf("renew-%d", i), obj{"ttl": ttl, "renewInterval": ttl, "redis": standalone()}))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("renewInterval = ttl = %s: %v, want refused", ttl, err)
			}
			m := allows.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("the refusal names no longest renewInterval: %v", err)
			}
			got, perr := time.ParseDuration(m[1])
			d, _ := time.ParseDuration(ttl)
			if want := v1alpha1.MaxRenewInterval(d).Truncate(time.Microsecond); perr != nil || got != want {
				t.Fatalf("the refusal allows up to %s (%v), MaxRenewInterval(%s) = %v", m[1], perr, ttl, want)
			}
			ok := newLock(ns, fmt.Sprintf("renew-ok-%d", i), obj{"ttl": ttl, "renewInterval": got.String(), "redis": standalone()})
			if err := env.Client.Create(timeout(t), ok); err != nil {
				t.Errorf("renewInterval %v, the refusal's own advice, refused: %v", got, err)
			}
		})
	}
}

// TestIdentityImmutable (issue 10, item 4): the fields that make a lock the
// lock it is cannot change on a live object, including by adding or
// removing an optional field; everything else still can.
func TestIdentityImmutable(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	svc := obj{"name": "redis", "port": 6379}
	replicated := func(addrs ...any) obj { return obj{"mode": "Replicated", "addresses": list(addrs...)} }
	sentinel := func(master string, addrs ...any) obj {
		return obj{"mode": "Sentinel", "sentinel": obj{"masterName": master, "addresses": list(addrs...)}}
	}
	// The key's rule is the lock's; the topology's are RedisSpec's, shared
	// with LockStore and ClusterLockStore (see lockstore_types_test.go).
	const moveServers = "is immutable: delete and re-create the lock or store to move it"
	cases := []struct {
		name  string
		spec  obj    // created with
		patch obj    // JSON merge patch of spec (nil removes a field)
		field string // "" when the update must be accepted
		msg   string
	}{
		{"key changed", obj{"key": "billing/a", "redis": standalone()}, obj{"key": "billing/b"},
			"spec.key", `key is immutable ("billing/a" to "billing/b"): delete and re-create the lock to move it`},
		// The keys are quoted: a control character stays visible and
		// cannot break the message's line.
		{"key changed to one with a tab", obj{"key": "billing/a", "redis": standalone()}, obj{"key": "billing/\ta"},
			"spec.key", `key is immutable ("billing/a" to "billing/\ta")`},
		{"key set", obj{"redis": standalone()}, obj{"key": "billing/b"},
			"spec.key", "key is immutable (setting it counts): delete and re-create the lock to move it"},
		{"key removed", obj{"key": "billing/a", "redis": standalone()}, obj{"key": nil},
			"spec.key", "key is immutable (removing it counts): delete and re-create the lock to move it"},
		{"mode changed", obj{"redis": standalone()}, obj{"redis": obj{"mode": "Replicated"}},
			"spec.redis.mode", "mode is immutable (Standalone to Replicated): delete and re-create the lock or store to move it"},
		{"db set", obj{"redis": standalone()}, obj{"redis": obj{"db": 1}},
			"spec.redis.db", "db is immutable (0 to 1; absent is 0): delete and re-create the lock or store to move it"},
		{"db changed", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "db": 2}}, obj{"redis": obj{"db": 3}},
			"spec.redis.db", "db is immutable (2 to 3; absent is 0): delete and re-create"},
		{"db removed", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "db": 2}}, obj{"redis": obj{"db": nil}},
			"spec.redis.db", "db is immutable (2 to 0; absent is 0): delete and re-create"},
		{"address changed", obj{"redis": standalone()}, obj{"redis": obj{"addresses": list("other:6379")}},
			"spec.redis.addresses", "addresses " + moveServers},
		{"address added", obj{"redis": replicated("r-0:6379")}, obj{"redis": obj{"addresses": list("r-0:6379", "r-1:6379")}},
			"spec.redis.addresses", "addresses " + moveServers},
		{"redlock node replaced", obj{"redis": obj{"mode": "Redlock", "addresses": list("a:6379", "b:6379", "c:6379")}},
			obj{"redis": obj{"addresses": list("a:6379", "b:6379", "d:6379")}},
			"spec.redis.addresses", "addresses " + moveServers},
		{"addresses replaced by a service", obj{"redis": standalone()}, obj{"redis": obj{"addresses": nil, "service": svc}},
			"spec.redis.addresses", "addresses " + moveServers},
		{"service replaced by addresses", obj{"redis": obj{"mode": "Standalone", "service": svc}}, obj{"redis": obj{"service": nil, "addresses": list("redis:6379")}},
			"spec.redis.service", "service is immutable (adding or removing it counts): delete and re-create the lock or store to move it"},
		{"service port changed", obj{"redis": obj{"mode": "Standalone", "service": svc}}, obj{"redis": obj{"service": obj{"port": 6380}}},
			"spec.redis.service", "service is immutable (redis:6379 to redis:6380): delete and re-create the lock or store to move it"},
		{"sentinel master renamed", obj{"redis": sentinel("mymaster", "s-0:26379")}, obj{"redis": obj{"sentinel": obj{"masterName": "other"}}},
			"spec.redis.sentinel.masterName", "sentinel.masterName is immutable (mymaster to other): delete and re-create the lock or store to move it"},
		{"sentinel replaced by addresses", obj{"redis": sentinel("mymaster", "s-0:26379")}, obj{"redis": obj{"mode": "Replicated", "sentinel": nil, "addresses": list("r-0:6379")}},
			"spec.redis.sentinel.masterName", "sentinel.masterName " + moveServers},

		{"db 0 said explicitly", obj{"redis": standalone()}, obj{"redis": obj{"db": 0}}, "", ""},
		{"addresses reordered", obj{"redis": replicated("r-0:6379", "r-1:6379")}, obj{"redis": obj{"addresses": list("r-1:6379", "r-0:6379")}}, "", ""},
		{"sentinels moved", obj{"redis": sentinel("mymaster", "s-0:26379")}, obj{"redis": obj{"sentinel": obj{"addresses": list("s-1:26379", "s-2:26379")}}}, "", ""},
		{"credentials changed behind a service", obj{"redis": obj{"mode": "Standalone", "service": svc}},
			obj{"redis": obj{"username": "locks", "passwordSecretRef": obj{"name": "redis-auth", "key": "password"}}}, "", ""},
		{"lease settings, safety, fencing, TLS changed", obj{"key": "billing/a", "redis": replicated("r-0:6379")},
			obj{"ttl": "1m", "renewInterval": "20s", "safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true, "waitForReplicas": 1},
				"fencing": obj{"enabled": false}, "redis": obj{"tls": obj{"enabled": true}}}, "", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			u := newLock(ns, fmt.Sprintf("identity-%d", i), tc.spec)
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("create: %v", err)
			}
			patch, err := json.Marshal(obj{"spec": tc.patch})
			if err != nil {
				t.Fatal(err)
			}
			err = env.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("update refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("update accepted; want refused at %s with %q", tc.field, tc.msg)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid (422): %v", err)
			}
			text := err.Error()
			t.Log(text)
			if !strings.Contains(text, tc.field+": ") || !strings.Contains(text, tc.msg) {
				t.Errorf("error does not name %s and say %q:\n%s", tc.field, tc.msg, text)
			}
		})
	}
}

// TestStatusSubresource checks that only the status subresource writes
// status, and that it writes nothing else.
func TestStatusSubresource(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx := timeout(t)
	key := client.ObjectKey{Namespace: ns, Name: "status"}

	status := v1alpha1.DistributedLockStatus{
		ObservedGeneration:   1,
		Key:                  ns + "/status",
		Connection:           &v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"10.0.0.7:6379"}},
		CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "redlease-lock-status"},
		Master:               "10.0.0.7:6379",
		Holder:               &v1alpha1.LockHolder{Identity: "settle-7f9c-x2", Fence: 1042, Since: metav1.NewTime(time.Now().Truncate(time.Second)), Pod: "settle-7f9c-x2", Node: "node-a"},
		FenceHighWater:       1042,
		Permits:              1,
		Held:                 1,
		Waiting:              &v1alpha1.LockWaiting{Count: 4},
		Endpoints:            []v1alpha1.EndpointStatus{{Address: "10.0.0.7:6379", Role: v1alpha1.EndpointRoleMaster, Reachable: true, ConnectedReplicas: ptr.To[int32](0)}},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonAvailable, Message: "ok", LastTransitionTime: metav1.Now()}},
	}
	dl := &v1alpha1.DistributedLock{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: v1alpha1.DistributedLockSpec{
			Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"10.0.0.7:6379"}},
		},
		Status: status,
	}

	// Create drops status.
	if err := env.Client.Create(ctx, dl.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.DistributedLock
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Holder != nil || got.Status.Master != "" || got.Status.FenceHighWater != 0 || len(got.Status.Conditions) != 0 ||
		got.Status.Key != "" || got.Status.Connection != nil || got.Status.CredentialsSecretRef != nil {
		t.Errorf("create kept status %+v", got.Status)
	}

	mainUpdateIgnoresStatus(ctx, t, env.Client, &got, status)
	statusUpdateWritesOnlyStatus(ctx, t, env.Client, &got, status)

	// A later main-resource update keeps what the status subresource wrote.
	got.Status = v1alpha1.DistributedLockStatus{}
	got.Spec.TTL = &metav1.Duration{Duration: 30 * time.Second}
	if err := env.Client.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Holder == nil || got.Status.FenceHighWater != 1042 {
		t.Errorf("main-resource update cleared status: %+v", got.Status)
	}

	t.Run("printer columns", func(t *testing.T) {
		// KEY, NODE and MESSAGE have priority 1: kubectl shows them with
		// -o wide only. STOREKIND and STORE are empty for an inline lock.
		checkPrinterColumns(t, env.Config, "namespaces/"+ns+"/distributedlocks/"+key.Name,
			[]string{"NAME", "STOREKIND", "STORE", "MODE", "KEY", "READY", "REASON", "HOLDER", "FENCE", "PERMITS", "HELD", "WAITERS", "NODE", "TTL", "AGE", "MESSAGE"},
			[]any{key.Name, nil, nil, "Standalone", ns + "/status", "True", "Available", "settle-7f9c-x2", float64(1042), float64(1), float64(1), float64(4), "node-a", "30s", anyCell, "ok"})
	})
}

// mainUpdateIgnoresStatus: an update of the main resource got (as last read)
// with status set writes the spec change (ttl 45s) but not status; got is
// read back.
func mainUpdateIgnoresStatus(ctx context.Context, t *testing.T, c client.Client, got *v1alpha1.DistributedLock, status v1alpha1.DistributedLockStatus) {
	t.Helper()
	got.Status = status
	got.Spec.TTL = &metav1.Duration{Duration: 45 * time.Second}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.TTLOrDefault() != 45*time.Second {
		t.Errorf("update lost the spec change")
	}
	if got.Status.Holder != nil || got.Status.FenceHighWater != 0 {
		t.Errorf("update of the main resource wrote status %+v", got.Status)
	}
}

// statusUpdateWritesOnlyStatus: an update of the status subresource of got
// (as last read, with ttl 45s) writes status, and not a spec change made
// with it; got is read back.
func statusUpdateWritesOnlyStatus(ctx context.Context, t *testing.T, c client.Client, got *v1alpha1.DistributedLock, status v1alpha1.DistributedLockStatus) {
	t.Helper()
	got.Status = status
	got.Spec.TTL = &metav1.Duration{Duration: time.Minute}
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("status update: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.TTLOrDefault() != 45*time.Second {
		t.Errorf("status update changed spec.ttl to %v", got.Spec.TTL)
	}
	if got.Status.Holder == nil || got.Status.Holder.Fence != 1042 || got.Status.FenceHighWater != 1042 ||
		got.Status.Master != "10.0.0.7:6379" || len(got.Status.Endpoints) != 1 || len(got.Status.Conditions) != 1 {
		t.Errorf("status update did not write status: %+v", got.Status)
	}
	if got.Status.Key != status.Key || got.Status.Connection == nil || got.Status.Connection.Mode != v1alpha1.RedisModeStandalone ||
		!slices.Equal(got.Status.Connection.Addresses, status.Connection.Addresses) ||
		got.Status.CredentialsSecretRef == nil || got.Status.CredentialsSecretRef.Name != status.CredentialsSecretRef.Name {
		t.Errorf("status update lost key, connection or credentialsSecretRef: %+v", got.Status)
	}
	if got.Status.Endpoints[0].ConnectedReplicas == nil || *got.Status.Endpoints[0].ConnectedReplicas != 0 {
		t.Errorf("connectedReplicas 0 was lost: %+v", got.Status.Endpoints[0])
	}
}

// checkPrinterColumns reads the object at path (under the API group
// version, e.g. "namespaces/ns/distributedlocks/name" or
// "clusterlockstores/name") as a Table, as kubectl get does, and checks its
// column names and the first len(wantCells) cells of its one row (the last
// columns are ages).
// anyCell in checkPrinterColumns' wantCells matches any cell (an age).
var anyCell any = struct{ any }{}

func checkPrinterColumns(t *testing.T, cfg *rest.Config, path string, wantCols []string, wantCells []any) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/%s/%s", strings.TrimSuffix(cfg.Host, "/"), v1alpha1.GroupVersion, path)
	req, err := http.NewRequestWithContext(timeout(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as Table: %s %v\n%s", url, resp.Status, err, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, strings.ToUpper(c.Name))
	}
	if !slices.Equal(names, wantCols) {
		t.Errorf("columns = %v, want %v", names, wantCols)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(wantCols) {
		t.Fatalf("rows = %+v", table.Rows)
	}
	cells := table.Rows[0].Cells
	for i, w := range wantCells {
		if w != anyCell && cells[i] != w {
			t.Errorf("%s = %v (%T), want %v (%T)", wantCols[i], cells[i], cells[i], w, w)
		}
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
)

// The tests of this file cover the stores (LockStore, ClusterLockStore) and
// the shape of a DistributedLock that lives on one (spec.storeRef), as the
// API server validates them (DESIGN.md §10, §10.1).

const (
	kindLock = "DistributedLock"
	kindLS   = "LockStore"
	kindCLS  = "ClusterLockStore"
)

// newObject returns an unstructured object of kind with spec.
func newObject(kind, ns, name string, spec obj) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{"spec": spec}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// createObject creates an object of kind in ns. A ClusterLockStore has no
// namespace: it is named "<ns>-<name>" so that tests sharing the API server
// do not collide, and deleted when t ends.
func createObject(t *testing.T, c client.Client, kind, ns, name string, spec obj) (*unstructured.Unstructured, error) {
	t.Helper()
	u := newObject(kind, ns, name, spec)
	if kind == kindCLS {
		u.SetNamespace("")
		u.SetName(ns + "-" + name)
	}
	err := c.Create(timeout(t), u)
	if err == nil && kind == kindCLS {
		deleteWhenDone(t, c, u)
	}
	return u, err
}

// wantInvalid checks that err refuses an object (422) at field with a
// message containing msg, and that no CEL rule failed to evaluate.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want refused at %s with %q", field, msg)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error is not Invalid (422): %v", err)
	}
	text := err.Error()
	t.Log(text)
	if !strings.Contains(text, field+": ") {
		t.Errorf("error does not name %s:\n%s", field, text)
	}
	if !strings.Contains(text, msg) {
		t.Errorf("error does not say %q:\n%s", msg, text)
	}
	for _, bad := range []string{"error evaluating", "no such key", "no such overload", "conversion error"} {
		if strings.Contains(text, bad) {
			t.Errorf("error shows a CEL evaluation failure (%q):\n%s", bad, text)
		}
	}
}

// Spec fragments. A ClusterLockStore's references name their namespace
// (inNS); everything else's must not.
var (
	lsRef   = obj{"kind": "LockStore", "name": "team-redis"}
	clsRef  = obj{"kind": "ClusterLockStore", "name": "shared"}
	authRef = obj{"name": "redis-auth", "key": "password"}
)

// inNS returns ref (a Secret or Service reference) with namespace "redis".
func inNS(ref obj) obj {
	out := obj{"namespace": "redis"}
	for k, v := range ref {
		out[k] = v
	}
	return out
}

func auth(pw obj) obj { return obj{"username": "locks", "passwordSecretRef": pw} }

func replicatedOn(addrs ...any) obj { return obj{"mode": "Replicated", "addresses": list(addrs...)} }

func sentinelOn(master string, pw obj) obj {
	s := obj{"masterName": master, "addresses": list("s-0:26379", "s-1:26379", "s-2:26379")}
	if pw != nil {
		s["passwordSecretRef"] = pw
	}
	return obj{"mode": "Sentinel", "sentinel": s}
}

func redlockOn() obj {
	return obj{"mode": "Redlock", "addresses": list("r-0:6379", "r-1:6379", "r-2:6379")}
}

func serviceOn(svc obj) obj { return obj{"mode": "Standalone", "service": svc} }

// withTLS returns a Standalone Redis with TLS on, a CA and a client
// certificate.
func withTLS(ca, cert obj) obj {
	return obj{"mode": "Standalone", "addresses": list("redis:6380"),
		"tls": obj{"enabled": true, "caSecretRef": ca, "clientCertSecretRef": cert}}
}

// TestStoresInvalidRefused creates stores, and DistributedLocks on stores,
// that the API server must refuse; the error names the field and explains
// the rule.
func TestStoresInvalidRefused(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	svc := obj{"name": "redis", "port": 6379}
	ca := obj{"name": "redis-ca", "key": "ca.crt"}
	cert := obj{"name": "redis-client"}
	none := obj{"isolation": "None"}
	const (
		exactlyOne  = "set exactly one of storeRef (a LockStore or ClusterLockStore that holds the Redis settings) or redis (the servers, inline)"
		lockOwnNS   = "Forbidden: a DistributedLock reads Secrets of its own namespace only"
		lsOwnNS     = "Forbidden: a LockStore uses Secrets and Services of its own namespace only"
		clsNeedsNS  = "Required value: a ClusterLockStore has no namespace of its own: say which namespace this reference is in"
		storeAuth   = "Forbidden: on a store, the pods' credentials are clientAuth and the controller's are controllerAuth (redis.username and redis.passwordSecretRef are for inline locks)"
		perLock     = "Forbidden: waitForReplicas is per lock: set it on the DistributedLocks that need it"
		quarPerLock = "Forbidden: failoverQuarantine is per lock: set it on the DistributedLocks that need it"
		needsRepl   = "Forbidden: replica guards need replicas: use them with Replicated, Sentinel or Cluster mode"
		storeGuard  = "Forbidden: the replica guard of a store's servers is the store's (spec.safety of the LockStore or ClusterLockStore); a lock on a store may only set waitForReplicas and failoverQuarantine"
		aclAuth     = "Forbidden: isolation: ACL gives each namespace a generated Redis user: clientAuth is for isolation: None"
	)
	cases := []struct {
		kind  string
		name  string
		spec  obj
		field string
		msg   string
	}{
		// A DistributedLock names a store or its servers, not both.
		{kindLock, "storeRef and redis", obj{"storeRef": lsRef, "redis": standalone()},
			"spec", exactlyOne},
		// An empty redis block is not an absent one (the schema refuses it
		// before the CEL rules run).
		{kindLock, "storeRef and an empty redis", obj{"storeRef": clsRef, "redis": obj{}},
			"spec.redis.mode", "Required value"},
		{kindLock, "storeRef of an unknown kind", obj{"storeRef": obj{"kind": "Store", "name": "team-redis"}},
			"spec.storeRef.kind", `Unsupported value: "Store": supported values: "LockStore", "ClusterLockStore"`},
		{kindLock, "storeRef kind in lower case", obj{"storeRef": obj{"kind": "lockstore", "name": "team-redis"}},
			"spec.storeRef.kind", `supported values: "LockStore", "ClusterLockStore"`},
		{kindLock, "storeRef without kind", obj{"storeRef": obj{"name": "team-redis"}},
			"spec.storeRef.kind", "Required value"},
		{kindLock, "storeRef without name", obj{"storeRef": obj{"kind": "LockStore"}},
			"spec.storeRef.name", "Required value"},
		{kindLock, "storeRef name not an object name", obj{"storeRef": obj{"kind": "LockStore", "name": "Team_Redis"}},
			"spec.storeRef.name", "must be an object name"},
		{kindLock, "controllerAuth on a storeRef lock", obj{"storeRef": clsRef, "controllerAuth": auth(authRef)},
			"spec.controllerAuth", "Forbidden: is for inline locks only: a store names its own controllerAuth"},
		// The replica guard of a store's servers is the store's; WAIT is
		// the lock's (accepted: TestStoresValidAccepted).
		{kindLock, "minReplicasToWrite on a storeRef lock", obj{"storeRef": clsRef, "safety": obj{"minReplicasToWrite": 1}},
			"spec.safety", storeGuard},
		{kindLock, "managed guard on a storeRef lock", obj{"storeRef": lsRef, "safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true, "waitForReplicas": 1}},
			"spec.safety", storeGuard},
		// A namespaced lock reads its own namespace only.
		{kindLock, "namespace on redis.passwordSecretRef", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": inNS(authRef)}},
			"spec.redis.passwordSecretRef.namespace", lockOwnNS},
		{kindLock, "namespace on controllerAuth", obj{"redis": standalone(), "controllerAuth": auth(inNS(authRef))},
			"spec.controllerAuth.passwordSecretRef.namespace", lockOwnNS},
		{kindLock, "namespace on the sentinels' password", obj{"redis": sentinelOn("locks", inNS(authRef))},
			"spec.redis.sentinel.passwordSecretRef.namespace", lockOwnNS},
		{kindLock, "namespace on the CA", obj{"redis": withTLS(inNS(ca), nil)},
			"spec.redis.tls.caSecretRef.namespace", lockOwnNS},
		{kindLock, "namespace on the client certificate", obj{"redis": withTLS(ca, inNS(cert))},
			"spec.redis.tls.clientCertSecretRef.namespace", lockOwnNS},
		{kindLock, "namespace on the service", obj{"redis": serviceOn(inNS(svc))},
			"spec.redis.service.namespace", "Forbidden: a DistributedLock uses Services of its own namespace only"},

		// LockStore.
		{kindLS, "no redis", obj{},
			"spec.redis", "Required value"},
		{kindLS, "redis.username and passwordSecretRef", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "username": "locks", "passwordSecretRef": authRef}},
			"spec.redis", storeAuth},
		{kindLS, "redis.passwordSecretRef", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "passwordSecretRef": authRef}},
			"spec.redis", storeAuth},
		{kindLS, "waitForReplicas", obj{"redis": replicatedOn("r-0:6379"), "safety": obj{"waitForReplicas": 1}},
			"spec.safety.waitForReplicas", perLock},
		{kindLS, "failoverQuarantine", obj{"redis": replicatedOn("r-0:6379"), "safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true, "failoverQuarantine": true}},
			"spec.safety.failoverQuarantine", quarPerLock},
		{kindLS, "minReplicasToWrite on Standalone", obj{"redis": standalone(), "safety": obj{"minReplicasToWrite": 1}},
			"spec.safety.minReplicasToWrite", needsRepl + ", not Standalone"},
		{kindLS, "minReplicasToWrite on Redlock", obj{"redis": redlockOn(), "safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true}},
			"spec.safety.minReplicasToWrite", needsRepl + ", not Redlock"},
		{kindLS, "manageReplicaSettings without a value", obj{"redis": replicatedOn("r-0:6379"), "safety": obj{"manageReplicaSettings": true}},
			"spec.safety.minReplicasToWrite", "manageReplicaSettings needs minReplicasToWrite of 1 or more"},
		{kindLS, "clientAuth username without password", obj{"redis": standalone(), "clientAuth": obj{"username": "locks"}},
			"spec.clientAuth.passwordSecretRef", "username needs passwordSecretRef"},
		{kindLS, "Redlock through a service", obj{"redis": obj{"mode": "Redlock", "service": svc}},
			"spec.redis.service", "Redlock needs an explicit, odd list of ≥ 3 stable addresses"},
		{kindLS, "namespace on controllerAuth", obj{"redis": standalone(), "controllerAuth": auth(inNS(authRef))},
			"spec.controllerAuth.passwordSecretRef.namespace", lsOwnNS},
		{kindLS, "namespace on clientAuth", obj{"redis": standalone(), "clientAuth": auth(inNS(authRef))},
			"spec.clientAuth.passwordSecretRef.namespace", lsOwnNS},
		{kindLS, "namespace on the sentinels' password", obj{"redis": sentinelOn("locks", inNS(authRef))},
			"spec.redis.sentinel.passwordSecretRef.namespace", lsOwnNS},
		{kindLS, "namespace on the CA", obj{"redis": withTLS(inNS(ca), cert)},
			"spec.redis.tls.caSecretRef.namespace", lsOwnNS},
		{kindLS, "namespace on the client certificate", obj{"redis": withTLS(ca, inNS(cert))},
			"spec.redis.tls.clientCertSecretRef.namespace", lsOwnNS},
		{kindLS, "namespace on the service", obj{"redis": serviceOn(inNS(svc))},
			"spec.redis.service.namespace", lsOwnNS},

		// ClusterLockStore: every reference names its namespace.
		{kindCLS, "controllerAuth without namespace", obj{"redis": standalone(), "controllerAuth": auth(authRef)},
			"spec.controllerAuth.passwordSecretRef.namespace", clsNeedsNS},
		{kindCLS, "clientAuth without namespace", obj{"redis": standalone(), "clientAuth": auth(authRef), "tenants": none},
			"spec.clientAuth.passwordSecretRef.namespace", clsNeedsNS},
		{kindCLS, "sentinels' password without namespace", obj{"redis": sentinelOn("locks", authRef)},
			"spec.redis.sentinel.passwordSecretRef.namespace", clsNeedsNS},
		{kindCLS, "CA without namespace", obj{"redis": withTLS(ca, inNS(cert))},
			"spec.redis.tls.caSecretRef.namespace", clsNeedsNS},
		{kindCLS, "client certificate without namespace", obj{"redis": withTLS(inNS(ca), cert)},
			"spec.redis.tls.clientCertSecretRef.namespace", clsNeedsNS},
		{kindCLS, "service without namespace", obj{"redis": serviceOn(svc)},
			"spec.redis.service.namespace", clsNeedsNS},
		{kindCLS, "empty namespace", obj{"redis": standalone(), "controllerAuth": auth(obj{"namespace": "", "name": "redis-admin", "key": "password"})},
			"spec.controllerAuth.passwordSecretRef.namespace", "at least 1 chars long"},
		{kindCLS, "namespace not a namespace name", obj{"redis": serviceOn(obj{"namespace": "Redis_NS", "name": "redis", "port": 6379})},
			"spec.redis.service.namespace", "must be a namespace name"},
		{kindCLS, "redis.username and passwordSecretRef", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "username": "locks", "passwordSecretRef": inNS(authRef)}},
			"spec.redis", storeAuth},
		{kindCLS, "waitForReplicas", obj{"redis": sentinelOn("locks", nil), "safety": obj{"minReplicasToWrite": 1, "waitForReplicas": 1}},
			"spec.safety.waitForReplicas", perLock},
		{kindCLS, "failoverQuarantine", obj{"redis": standalone(), "safety": obj{"failoverQuarantine": true}},
			"spec.safety.failoverQuarantine", quarPerLock},
		{kindCLS, "minReplicasToWrite on Standalone", obj{"redis": standalone(), "safety": obj{"minReplicasToWrite": 1}},
			"spec.safety.minReplicasToWrite", needsRepl + ", not Standalone"},
		{kindCLS, "minReplicasToWrite on Redlock", obj{"redis": redlockOn(), "safety": obj{"minReplicasToWrite": 2}},
			"spec.safety.minReplicasToWrite", needsRepl + ", not Redlock"},
		// clientAuth is for isolation None; absent tenants count as ACL.
		{kindCLS, "clientAuth under isolation ACL", obj{"redis": standalone(), "clientAuth": auth(inNS(authRef)), "tenants": obj{"isolation": "ACL"}},
			"spec.clientAuth", aclAuth},
		{kindCLS, "clientAuth under the default isolation", obj{"redis": standalone(), "clientAuth": auth(inNS(authRef)), "tenants": obj{"namespaceSelector": obj{}}},
			"spec.clientAuth", aclAuth},
		{kindCLS, "clientAuth without tenants", obj{"redis": standalone(), "clientAuth": auth(inNS(authRef))},
			"spec.clientAuth", aclAuth},
		{kindCLS, "unknown isolation", obj{"redis": standalone(), "tenants": obj{"isolation": "Namespace"}},
			"spec.tenants.isolation", `Unsupported value: "Namespace": supported values: "ACL", "None"`},
		// FunctionsOnly restricts tenant users: only under ACL.
		{kindCLS, "FunctionsOnly under isolation None", obj{"redis": standalone(), "tenants": obj{"isolation": "None", "scripts": "FunctionsOnly"}},
			"spec.tenants.scripts", "scripts: FunctionsOnly restricts each namespace's Redis user: it needs isolation ACL (under None every namespace uses clientAuth)"},
		{kindCLS, "unknown scripts", obj{"redis": standalone(), "tenants": obj{"scripts": "Lua"}},
			"spec.tenants.scripts", `Unsupported value: "Lua": supported values: "Scripts", "FunctionsOnly"`},
	}
	for i, tc := range cases {
		t.Run(tc.kind+": "+tc.name, func(t *testing.T) {
			_, err := createObject(t, env.Client, tc.kind, ns, fmt.Sprintf("invalid-%d", i), tc.spec)
			wantInvalid(t, err, tc.field, tc.msg)
		})
	}
}

// TestStoresValidAccepted creates stores, and DistributedLocks on stores,
// that the API server must accept. A lock may name a store that does not
// exist (the controller reports StoreNotFound).
func TestStoresValidAccepted(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	svc := obj{"name": "redis", "port": 6379}
	ca := obj{"name": "redis-ca", "key": "ca.crt"}
	cert := obj{"name": "redis-client"}
	guard := obj{"minReplicasToWrite": 1, "minReplicasMaxLag": "5s", "manageReplicaSettings": true}
	cases := []struct {
		kind string
		name string
		spec obj
	}{
		{kindLS, "minimal", obj{"redis": standalone()}},
		{kindLS, "Standalone through a service, with clientAuth", obj{"redis": serviceOn(svc), "clientAuth": auth(authRef)}},
		{kindLS, "both credentials and mutual TLS", obj{"redis": withTLS(ca, cert), "clientAuth": auth(authRef),
			"controllerAuth": obj{"username": "redlease-operator", "passwordSecretRef": obj{"name": "redis-admin", "key": "password"}}}},
		{kindLS, "Replicated with a managed guard", obj{"redis": replicatedOn("r-0:6379", "r-1:6379"), "safety": guard}},
		{kindLS, "Sentinel with the sentinels' password", obj{"redis": sentinelOn("locks", authRef), "safety": obj{"minReplicasToWrite": 1}}},
		{kindLS, "Cluster", obj{"redis": obj{"mode": "Cluster", "addresses": list("c-0:6379")}, "safety": guard}},
		{kindLS, "Redlock", obj{"redis": redlockOn()}},
		{kindLS, "explicit zero replica counts on Standalone", obj{"redis": standalone(), "safety": obj{"minReplicasToWrite": 0, "waitForReplicas": 0}}},

		{kindCLS, "minimal, no tenants", obj{"redis": standalone()}},
		{kindCLS, "tenants under ACL", obj{"redis": sentinelOn("locks", inNS(authRef)),
			"controllerAuth": auth(inNS(authRef)), "safety": guard,
			"tenants": obj{"namespaceSelector": obj{"matchLabels": obj{"redlease.io/locks": "true"}}, "isolation": "ACL"}}},
		{kindCLS, "every namespace", obj{"redis": standalone(), "tenants": obj{"namespaceSelector": obj{}}}},
		{kindCLS, "selector with expressions", obj{"redis": standalone(), "tenants": obj{"namespaceSelector": obj{
			"matchExpressions": list(obj{"key": "team", "operator": "In", "values": list("billing", "payments")})}}}},
		{kindCLS, "isolation None with clientAuth", obj{"redis": standalone(), "clientAuth": auth(inNS(authRef)),
			"tenants": obj{"namespaceSelector": obj{}, "isolation": "None"}}},
		{kindCLS, "isolation None without AUTH", obj{"redis": standalone(), "tenants": obj{"isolation": "None"}}},
		{kindCLS, "FunctionsOnly under the default isolation", obj{"redis": standalone(), "tenants": obj{"namespaceSelector": obj{}, "scripts": "FunctionsOnly"}}},
		{kindCLS, "Scripts under isolation None", obj{"redis": standalone(), "tenants": obj{"isolation": "None", "scripts": "Scripts"}}},
		{kindCLS, "Standalone through a service", obj{"redis": serviceOn(inNS(svc))}},
		{kindCLS, "Replicated with mutual TLS", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6380"),
			"tls": obj{"enabled": true, "caSecretRef": inNS(ca), "clientCertSecretRef": inNS(cert), "serverName": "redis.redis.svc"}}, "safety": guard}},
		{kindCLS, "Cluster through a service", obj{"redis": obj{"mode": "Cluster", "service": inNS(svc)}}},
		{kindCLS, "Redlock", obj{"redis": redlockOn()}},

		{kindLock, "on a LockStore", obj{"storeRef": lsRef}},
		{kindLock, "on a ClusterLockStore, every lock setting", obj{"storeRef": clsRef, "key": "payouts/batch", "ttl": "1m",
			"renewInterval": "20s", "fencing": obj{"enabled": false}, "safety": obj{"waitForReplicas": 2}}},
		{kindLock, "on a store, replica guard explicitly off", obj{"storeRef": clsRef,
			"safety": obj{"waitForReplicas": 1, "minReplicasToWrite": 0, "manageReplicaSettings": false}}},
		{kindLock, "on a store that does not exist", obj{"storeRef": obj{"kind": "ClusterLockStore", "name": "nowhere"}}},
		{kindLock, "inline with controllerAuth and mutual TLS", obj{"redis": obj{"mode": "Replicated", "addresses": list("r-0:6380"),
			"username": "locks", "passwordSecretRef": authRef, "tls": obj{"enabled": true, "caSecretRef": ca, "clientCertSecretRef": cert}},
			"controllerAuth": obj{"username": "redlease-operator", "passwordSecretRef": obj{"name": "redis-admin", "key": "password"}},
			"safety":         guard}},
	}
	for i, tc := range cases {
		t.Run(tc.kind+": "+tc.name, func(t *testing.T) {
			if _, err := createObject(t, env.Client, tc.kind, ns, fmt.Sprintf("valid-%d", i), tc.spec); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestClusterLockStoreDefaults: tenants.isolation defaults to ACL and
// tenants.scripts to Scripts; absent
// tenants stay absent (no namespace may use the store).
func TestClusterLockStoreDefaults(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	cases := []struct {
		name    string
		tenants obj // nil: absent
		want    *v1alpha1.TenantsSpec
	}{
		{"no tenants", nil, nil},
		{"empty tenants", obj{}, &v1alpha1.TenantsSpec{Isolation: v1alpha1.IsolationACL, Scripts: v1alpha1.TenantScriptsScripts}},
		{"selector only", obj{"namespaceSelector": obj{"matchLabels": obj{"team": "billing"}}},
			&v1alpha1.TenantsSpec{Isolation: v1alpha1.IsolationACL, Scripts: v1alpha1.TenantScriptsScripts,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "billing"}}}},
		{"None", obj{"isolation": "None"}, &v1alpha1.TenantsSpec{Isolation: v1alpha1.IsolationNone, Scripts: v1alpha1.TenantScriptsScripts}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := obj{"redis": standalone()}
			if tc.tenants != nil {
				spec["tenants"] = tc.tenants
			}
			u, err := createObject(t, env.Client, kindCLS, ns, fmt.Sprintf("defaults-%d", i), spec)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var got v1alpha1.ClusterLockStore
			if err := env.Client.Get(timeout(t), client.ObjectKeyFromObject(u), &got); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got.Spec.Tenants, tc.want) {
				t.Errorf("tenants = %+v, want %+v", got.Spec.Tenants, tc.want)
			}
			if s := got.Spec; s.Safety != nil || s.ClientAuth != nil || s.ControllerAuth != nil {
				t.Errorf("spec = %+v: want no safety or credentials", s)
			}
		})
	}
}

// TestLockStoreDefaults: a store's replica guard gets the default lag.
func TestLockStoreDefaults(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	u, err := createObject(t, env.Client, kindLS, ns, "lag", obj{"redis": replicatedOn("r-0:6379"), "safety": obj{"minReplicasToWrite": 1}})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	var got v1alpha1.LockStore
	if err := env.Client.Get(timeout(t), client.ObjectKeyFromObject(u), &got); err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.SafetySpec{MinReplicasToWrite: 1, MinReplicasMaxLag: &metav1.Duration{Duration: 10 * time.Second}}
	if !equality.Semantic.DeepEqual(got.Spec.Safety, want) {
		t.Errorf("safety = %+v, want %+v", got.Spec.Safety, want)
	}
}

// TestLockOnStoreDefaults: a lock on a store gets the lease defaults and no
// Redis settings of its own.
func TestLockOnStoreDefaults(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	u, err := createObject(t, env.Client, kindLock, ns, "on-store", obj{"storeRef": clsRef})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	var got v1alpha1.DistributedLock
	if err := env.Client.Get(timeout(t), client.ObjectKeyFromObject(u), &got); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.DistributedLockSpec{
		TTL:      &metav1.Duration{Duration: v1alpha1.DefaultTTL},
		StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"},
		Fencing:  &v1alpha1.FencingSpec{Enabled: ptr.To(true)},
		Permits:  1,
	}
	if !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want)
	}
	if got.Spec.Inline() {
		t.Errorf("Inline() = true for a lock on a store")
	}
}

// TestStoresIdentityImmutable: the topology identity (RedisSpec's rules) of
// locks and stores, a lock's key and storeRef, and a ClusterLockStore's
// isolation cannot change on a live object, adding or removing an optional
// field included; everything else can.
func TestStoresIdentityImmutable(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)

	const moveServers = "is immutable: delete and re-create the lock or store to move it"
	const moveLock = "delete and re-create the lock to move it"
	isolation := func(from, to string) string {
		return "tenants.isolation is immutable (" + from + " to " + to + "): create another store to change how tenants are kept apart"
	}
	type change struct {
		name  string
		spec  obj    // created with
		patch obj    // JSON merge patch of spec (nil removes a field)
		field string // "" when the update must be accepted
		msg   string
	}
	// The topology's identity, on each of the three kinds (svc is the
	// kind's Service reference, shown in messages as svcShown).
	topology := func(svc obj, svcShown string) []change {
		return []change{
			{"mode changed", obj{"redis": standalone()}, obj{"redis": obj{"mode": "Replicated"}},
				"spec.redis.mode", "mode is immutable (Standalone to Replicated): delete and re-create the lock or store to move it"},
			{"db set", obj{"redis": standalone()}, obj{"redis": obj{"db": 1}},
				"spec.redis.db", "db is immutable (0 to 1; absent is 0): delete and re-create the lock or store to move it"},
			{"db removed", obj{"redis": obj{"mode": "Standalone", "addresses": list("redis:6379"), "db": 2}}, obj{"redis": obj{"db": nil}},
				"spec.redis.db", "db is immutable (2 to 0; absent is 0)"},
			{"address changed", obj{"redis": standalone()}, obj{"redis": obj{"addresses": list("other:6379")}},
				"spec.redis.addresses", "addresses " + moveServers},
			{"address added", obj{"redis": replicatedOn("r-0:6379")}, obj{"redis": obj{"addresses": list("r-0:6379", "r-1:6379")}},
				"spec.redis.addresses", "addresses " + moveServers},
			{"addresses replaced by a service", obj{"redis": standalone()}, obj{"redis": obj{"addresses": nil, "service": svc}},
				"spec.redis.addresses", "addresses " + moveServers},
			{"service port changed", obj{"redis": serviceOn(svc)}, obj{"redis": obj{"service": obj{"port": 6380}}},
				"spec.redis.service", "service is immutable (" + svcShown + ":6379 to " + svcShown + ":6380): delete and re-create the lock or store to move it"},
			{"sentinel master renamed", obj{"redis": sentinelOn("locks", nil)}, obj{"redis": obj{"sentinel": obj{"masterName": "other"}}},
				"spec.redis.sentinel.masterName", "sentinel.masterName is immutable (locks to other): delete and re-create the lock or store to move it"},

			{"db 0 said explicitly", obj{"redis": standalone()}, obj{"redis": obj{"db": 0}}, "", ""},
			{"addresses reordered", obj{"redis": replicatedOn("r-0:6379", "r-1:6379")}, obj{"redis": obj{"addresses": list("r-1:6379", "r-0:6379")}}, "", ""},
			{"sentinels moved", obj{"redis": sentinelOn("locks", nil)}, obj{"redis": obj{"sentinel": obj{"addresses": list("s-7:26379")}}}, "", ""},
			{"TLS turned on", obj{"redis": standalone()}, obj{"redis": obj{"tls": obj{"enabled": true, "serverName": "redis.svc"}}}, "", ""},
		}
	}
	cases := map[string][]change{
		kindLock: append(topology(obj{"name": "redis", "port": 6379}, "redis"),
			change{"storeRef renamed", obj{"storeRef": lsRef}, obj{"storeRef": obj{"name": "other"}},
				"spec.storeRef", "storeRef is immutable (LockStore/team-redis to LockStore/other): delete and re-create the lock to move it"},
			change{"storeRef kind changed", obj{"storeRef": lsRef}, obj{"storeRef": obj{"kind": "ClusterLockStore"}},
				"spec.storeRef", "storeRef is immutable (LockStore/team-redis to ClusterLockStore/team-redis): delete and re-create the lock to move it"},
			change{"storeRef replaced by redis", obj{"storeRef": clsRef}, obj{"storeRef": nil, "redis": standalone()},
				"spec.storeRef", "storeRef is immutable (switching between storeRef and redis counts): delete and re-create the lock to move it"},
			change{"redis replaced by storeRef", obj{"redis": standalone()}, obj{"redis": nil, "storeRef": clsRef},
				"spec.storeRef", "storeRef is immutable (switching between storeRef and redis counts): delete and re-create the lock to move it"},
			change{"key changed on a store", obj{"storeRef": clsRef, "key": "payouts/a"}, obj{"key": "payouts/b"},
				"spec.key", `key is immutable ("payouts/a" to "payouts/b"): ` + moveLock},
			change{"key set on a store", obj{"storeRef": clsRef}, obj{"key": "payouts/b"},
				"spec.key", "key is immutable (setting it counts): " + moveLock},
			change{"key removed on a store", obj{"storeRef": lsRef, "key": "payouts/a"}, obj{"key": nil},
				"spec.key", "key is immutable (removing it counts): " + moveLock},
			change{"lease settings changed on a store", obj{"storeRef": clsRef, "key": "payouts/a"},
				obj{"ttl": "1m", "renewInterval": "20s", "safety": obj{"waitForReplicas": 1}, "fencing": obj{"enabled": false}}, "", ""},
		),
		kindLS: append(topology(obj{"name": "redis", "port": 6379}, "redis"),
			change{"credentials, TLS and guard changed", obj{"redis": replicatedOn("r-0:6379")},
				obj{"redis": obj{"tls": obj{"enabled": true, "caSecretRef": obj{"name": "ca", "key": "ca.crt"}}},
					"clientAuth": auth(authRef), "controllerAuth": auth(obj{"name": "admin", "key": "password"}),
					"safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true}}, "", ""},
		),
		kindCLS: append(topology(obj{"namespace": "redis", "name": "redis", "port": 6379}, "redis/redis"),
			change{"service moved to another namespace", obj{"redis": serviceOn(inNS(obj{"name": "redis", "port": 6379}))},
				obj{"redis": obj{"service": obj{"namespace": "cache"}}},
				"spec.redis.service", "service is immutable (redis/redis:6379 to cache/redis:6379): delete and re-create the lock or store to move it"},
			change{"isolation ACL to None", obj{"redis": standalone(), "tenants": obj{"isolation": "ACL"}}, obj{"tenants": obj{"isolation": "None"}},
				"spec.tenants.isolation", isolation("ACL", "None")},
			change{"isolation None to ACL", obj{"redis": standalone(), "tenants": obj{"isolation": "None"}}, obj{"tenants": obj{"isolation": "ACL"}},
				"spec.tenants.isolation", isolation("None", "ACL")},
			// Absent tenants count as the default, ACL.
			change{"tenants added under None", obj{"redis": standalone()}, obj{"tenants": obj{"isolation": "None"}},
				"spec.tenants.isolation", isolation("ACL", "None")},
			change{"tenants under None removed", obj{"redis": standalone(), "tenants": obj{"isolation": "None"}}, obj{"tenants": nil},
				"spec.tenants.isolation", isolation("None", "ACL")},
			change{"tenants added under the default", obj{"redis": standalone()}, obj{"tenants": obj{"namespaceSelector": obj{}}}, "", ""},
			change{"tenants under ACL removed", obj{"redis": standalone(), "tenants": obj{}}, obj{"tenants": nil}, "", ""},
			change{"namespaceSelector changed", obj{"redis": standalone(), "tenants": obj{"namespaceSelector": obj{"matchLabels": obj{"a": "b"}}}},
				obj{"tenants": obj{"namespaceSelector": obj{"matchLabels": obj{"a": "c"}}}}, "", ""},
			change{"credentials, TLS and guard changed", obj{"redis": sentinelOn("locks", nil), "tenants": obj{"isolation": "None"}},
				obj{"redis": obj{"tls": obj{"enabled": true, "caSecretRef": inNS(obj{"name": "ca", "key": "ca.crt"}), "clientCertSecretRef": inNS(obj{"name": "client"})},
					"sentinel": obj{"passwordSecretRef": inNS(authRef)}},
					"clientAuth": auth(inNS(authRef)), "controllerAuth": auth(inNS(authRef)),
					"safety": obj{"minReplicasToWrite": 1, "manageReplicaSettings": true}}, "", ""},
		),
	}
	for _, kind := range []string{kindLock, kindLS, kindCLS} {
		for i, tc := range cases[kind] {
			t.Run(kind+": "+tc.name, func(t *testing.T) {
				u, err := createObject(t, env.Client, kind, ns, fmt.Sprintf("identity-%d", i), tc.spec)
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				patch, err := json.Marshal(obj{"spec": tc.patch})
				if err != nil {
					t.Fatal(err)
				}
				err = env.Client.Patch(timeout(t), u, client.RawPatch(types.MergePatchType, patch))
				if tc.field == "" {
					if err != nil {
						t.Fatalf("update refused: %v", err)
					}
					return
				}
				wantInvalid(t, err, tc.field, tc.msg)
			})
		}
	}
}

// TestStoresStatusAndPrinterColumns writes the stores' status through the
// status subresource and reads the stores, and a lock on one, as kubectl
// get does.
func TestStoresStatusAndPrinterColumns(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx := timeout(t)
	ready := []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonAvailable, Message: "ok", LastTransitionTime: metav1.Now()}}
	storeStatus := v1alpha1.LockStoreStatus{
		ObservedGeneration: 1,
		Conditions:         ready,
		Master:             "10.0.0.7:6379",
		Endpoints: []v1alpha1.EndpointStatus{{Address: "10.0.0.7:6379", Role: v1alpha1.EndpointRoleMaster, Reachable: true,
			ConnectedReplicas: ptr.To[int32](2), RunID: "abc"}},
		Tenants: 12,
	}

	ls := &v1alpha1.LockStore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-redis"},
		Spec:       v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{"10.0.0.7:6379"}}},
		Status:     storeStatus,
	}
	if err := env.Client.Create(ctx, ls); err != nil {
		t.Fatal(err)
	}
	writeStoreStatus(t, env.Client, ls, &ls.Status, storeStatus)
	t.Run("LockStore columns", func(t *testing.T) {
		checkPrinterColumns(t, env.Config, "namespaces/"+ns+"/lockstores/"+ls.Name,
			[]string{"NAME", "MODE", "READY", "REASON", "MASTER", "AGE", "MESSAGE"},
			[]any{ls.Name, "Replicated", "True", "Available", "10.0.0.7:6379", anyCell, "ok"})
	})

	cls := &v1alpha1.ClusterLockStore{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-shared"},
		Spec: v1alpha1.ClusterLockStoreSpec{
			Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel,
				Sentinel: &v1alpha1.SentinelSpec{MasterName: "locks", Addresses: []string{"s-0:26379"}}},
			Tenants: &v1alpha1.TenantsSpec{NamespaceSelector: &metav1.LabelSelector{}},
		},
	}
	if err := env.Client.Create(ctx, cls); err != nil {
		t.Fatal(err)
	}
	deleteWhenDone(t, env.Client, cls)
	writeStoreStatus(t, env.Client, cls, &cls.Status, storeStatus)
	t.Run("ClusterLockStore columns", func(t *testing.T) {
		checkPrinterColumns(t, env.Config, "clusterlockstores/"+cls.Name,
			[]string{"NAME", "MODE", "ISOLATION", "READY", "REASON", "TENANTS", "AGE", "MESSAGE"},
			[]any{cls.Name, "Sentinel", "ACL", "True", "Available", float64(12), anyCell, "ok"})
	})

	dl := &v1alpha1.DistributedLock{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payout-batch"},
		Spec: v1alpha1.DistributedLockSpec{Key: "payouts/batch", Permits: 3,
			StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: cls.Name}},
	}
	if err := env.Client.Create(ctx, dl); err != nil {
		t.Fatal(err)
	}
	dl.Status = v1alpha1.DistributedLockStatus{
		Key:                  ns + "/payouts/batch",
		Connection:           &v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeSentinel, Sentinel: &v1alpha1.SentinelConnection{MasterName: "locks", Addresses: []string{"s-0:26379"}}},
		CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "redlease-" + cls.Name},
		Master:               "10.0.0.7:6379",
		Conditions:           ready,
		Permits:              3,
		Held:                 2,
		Holders: []v1alpha1.PermitHolder{{Identity: "payout-7f9c", Fence: 7, Since: metav1.NewTime(time.Now().Truncate(time.Second))},
			{Identity: "payout-8a0d", Fence: 8, Since: metav1.NewTime(time.Now().Truncate(time.Second))}},
	}
	if err := env.Client.Status().Update(ctx, dl); err != nil {
		t.Fatalf("status update: %v", err)
	}
	t.Run("DistributedLock on a store columns", func(t *testing.T) {
		checkPrinterColumns(t, env.Config, "namespaces/"+ns+"/distributedlocks/"+dl.Name,
			[]string{"NAME", "STOREKIND", "STORE", "MODE", "KEY", "READY", "REASON", "HOLDER", "FENCE", "PERMITS", "HELD", "WAITERS", "NODE", "TTL", "AGE", "MESSAGE"},
			[]any{dl.Name, "ClusterLockStore", cls.Name, "Sentinel", ns + "/payouts/batch", "True", "Available", nil, nil, float64(3), float64(2), nil, nil, "30s", anyCell, "ok"})
	})
}

// writeStoreStatus checks that creating store (whose status field is
// status) dropped its status and that an update of the main resource does
// not write want, then writes want through the status subresource and
// checks it was kept.
func writeStoreStatus(t *testing.T, c client.Client, store client.Object, status *v1alpha1.LockStoreStatus, want v1alpha1.LockStoreStatus) {
	t.Helper()
	ctx := timeout(t)
	key := client.ObjectKeyFromObject(store)
	if err := c.Get(ctx, key, store); err != nil {
		t.Fatal(err)
	}
	if status.Master != "" || len(status.Conditions) != 0 || status.Tenants != 0 {
		t.Errorf("create kept status %+v", *status)
	}
	*status = want
	if err := c.Update(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, store); err != nil {
		t.Fatal(err)
	}
	if status.Master != "" || status.Tenants != 0 {
		t.Errorf("update of the main resource wrote status %+v", *status)
	}
	*status = want
	if err := c.Status().Update(ctx, store); err != nil {
		t.Fatalf("status update: %v", err)
	}
	if err := c.Get(ctx, key, store); err != nil {
		t.Fatal(err)
	}
	if status.Master != want.Master || status.Tenants != want.Tenants || len(status.Conditions) != 1 ||
		len(status.Endpoints) != 1 || status.Endpoints[0].ConnectedReplicas == nil || *status.Endpoints[0].ConnectedReplicas != 2 {
		t.Errorf("status update did not write status: %+v", *status)
	}
}

// TestStoresTypedObjectsAccepted creates stores and a lock on a store from
// the Go types: what a Go client sends (omitempty, omitzero: no empty
// spec.redis next to storeRef) must pass validation.
func TestStoresTypedObjectsAccepted(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	ctx := timeout(t)

	tls := func(namespace string) *v1alpha1.TLSSpec {
		return &v1alpha1.TLSSpec{Enabled: true, ServerName: "redis.redis.svc",
			CASecretRef:         &v1alpha1.SecretKeyRef{Namespace: namespace, Name: "redis-ca", Key: "ca.crt"},
			ClientCertSecretRef: &v1alpha1.SecretReference{Namespace: namespace, Name: "redis-client"}}
	}
	pw := func(namespace, name string) *v1alpha1.SecretKeyRef {
		return &v1alpha1.SecretKeyRef{Namespace: namespace, Name: name, Key: "password"}
	}
	guard := &v1alpha1.SafetySpec{MinReplicasToWrite: 1, MinReplicasMaxLag: &metav1.Duration{Duration: 5 * time.Second}, ManageReplicaSettings: true}
	objects := []client.Object{
		&v1alpha1.LockStore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-redis"},
			Spec: v1alpha1.LockStoreSpec{
				Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeSentinel, DB: 1, TLS: tls(""),
					Sentinel: &v1alpha1.SentinelSpec{MasterName: "locks", Addresses: []string{"s-0:26379"}, Username: "sentinel", PasswordSecretRef: pw("", "sentinel-auth")}},
				ControllerAuth: &v1alpha1.RedisAuth{Username: "redlease-operator", PasswordSecretRef: pw("", "redis-admin")},
				ClientAuth:     &v1alpha1.RedisAuth{Username: "locks", PasswordSecretRef: pw("", "redis-auth")},
				Safety:         guard,
			},
		},
		&v1alpha1.ClusterLockStore{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-shared"},
			Spec: v1alpha1.ClusterLockStoreSpec{
				Redis:          v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, TLS: tls("redis"), Service: &v1alpha1.ServiceReference{Namespace: "redis", Name: "redis", Port: 6379}},
				ControllerAuth: &v1alpha1.RedisAuth{Username: "redlease-operator", PasswordSecretRef: pw("redis", "redis-admin")},
				ClientAuth:     &v1alpha1.RedisAuth{Username: "locks", PasswordSecretRef: pw("redis", "redis-auth")},
				Safety:         guard,
				Tenants: &v1alpha1.TenantsSpec{Isolation: v1alpha1.IsolationNone,
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"redlease.io/locks": "true"}}},
			},
		},
		&v1alpha1.DistributedLock{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-store"},
			Spec: v1alpha1.DistributedLockSpec{
				Key:      "payouts/batch",
				TTL:      &metav1.Duration{Duration: time.Minute},
				StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: ns + "-shared"},
				Safety:   &v1alpha1.SafetySpec{WaitForReplicas: 1},
			},
		},
	}
	for _, o := range objects {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Errorf("%T refused: %v", o, err)
			continue
		}
		if o.GetNamespace() == "" {
			deleteWhenDone(t, env.Client, o)
		}
	}
}

// TestEffectiveKey checks the lock's Redis key: "<namespace>/" is forced
// under a store's ACL isolation only.
func TestEffectiveKey(t *testing.T) {
	cases := []struct {
		key      string
		isolated bool
		want     string
	}{
		{"", false, "billing/nightly"},
		{"settlement", false, "settlement"},
		{"", true, "billing/nightly"},
		{"settlement", true, "billing/settlement"},
		{"other/settlement", true, "billing/other/settlement"},
	}
	for _, tc := range cases {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "nightly"},
			Spec: v1alpha1.DistributedLockSpec{Key: tc.key}}
		if got := dl.EffectiveKey(tc.isolated); got != tc.want {
			t.Errorf("key %q, isolated %v: EffectiveKey = %q, want %q", tc.key, tc.isolated, got, tc.want)
		}
	}
}

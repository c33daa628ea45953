package controllers

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// TestStoredBeforeTheRules: objects that an older CRD accepted and today's
// refuses stay stored; the controller reports them as InvalidSpec (Ready
// False) instead of acting on them. The API server of this test runs the
// CRD without the newer rules, as a cluster did before an upgrade.
func TestStoredBeforeTheRules(t *testing.T) {
	t.Parallel()
	env := legacyEnv(t,
		"a Service's endpoints change with pod IPs", // Redlock through a Service
		"Redlock needs an explicit, odd list",
		"must leave room for a renewal", // 2 × renewInterval ≤ 0.99 × ttl − 2ms
	)
	srv := redistest.StartStandalone(t)
	// Three ready endpoints behind the Service, mapped to real nodes: the
	// old controller found a quorum there (3 of the 5 declared nodes).
	nodes := redistest.StartNodes(t, 3)
	h := newHarness(t, harnessOptions{env: env, dialer: mapDialer(map[string]string{
		"192.0.2.1:6379": nodes[0].Addr(),
		"192.0.2.2:6379": nodes[1].Addr(),
		"192.0.2.3:6379": nodes[2].Addr(),
	})})
	ctx := h.ctx()
	if err := h.c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "redlock"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "redis", Port: 6379}}},
	}); err != nil {
		t.Fatal(err)
	}
	var eps []discoveryv1.Endpoint
	for _, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	if err := h.c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: h.ns, Name: "redlock-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "redlock"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("redis"), Port: ptr.To[int32](6379)}},
	}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		spec map[string]any
		msg  string
	}{
		{"redlock-service", map[string]any{"redis": map[string]any{"mode": "Redlock",
			"service": map[string]any{"name": "redlock", "port": 6379}, "nodes": 5}},
			"Redlock needs an explicit, odd list of ≥ 3 stable addresses"},
		{"renew-too-late", map[string]any{"ttl": "30s", "renewInterval": "20s",
			"redis": map[string]any{"mode": "Standalone", "addresses": []any{srv.Addr()}}},
			"spec.renewInterval 20s must leave room for a renewal inside the lease"},
		// On a Ready store: the lock's own spec is what is wrong.
		{"renew-too-late-on-store", map[string]any{"ttl": "30s", "renewInterval": "20s",
			"storeRef": map[string]any{"kind": "LockStore", "name": "plain"}},
			"spec.renewInterval 20s must leave room for a renewal inside the lease"},
	}
	if err := h.c.Create(ctx, &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "plain"},
		Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DistributedLock"))
		u.SetNamespace(h.ns)
		u.SetName(tc.name)
		if err := h.c.Create(ctx, u); err != nil {
			t.Fatalf("%s: the CRD without the new rules refused it: %v", tc.name, err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dl := h.waitFor(tc.name, "InvalidSpec", func(dl *v1alpha1.DistributedLock) error {
				return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec)
			})
			if msg := condition(dl, v1alpha1.ConditionReady).Message; !strings.Contains(msg, tc.msg) {
				t.Errorf("Ready message %q does not say %q", msg, tc.msg)
			}
			t.Logf("Ready: %s", condition(dl, v1alpha1.ConditionReady).Message)
			if dl.Status.Quorum != 0 || len(dl.Status.Endpoints) != 0 {
				t.Errorf("quorum %d, endpoints %+v: want none for a lock the controller cannot use", dl.Status.Quorum, dl.Status.Endpoints)
			}
		})
	}
}

// legacyEnv starts an API server of its own for t with the DistributedLock
// CRD of config/crd/bases minus the CEL rules whose message contains one of
// drop: the schema a cluster ran before those rules were added.
func legacyEnv(t *testing.T, drop ...string) *kubetest.Env {
	t.Helper()
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// The other CRDs go in as they are: the manager watches them.
	for _, name := range []string{"distributedlocks", "lockstores", "clusterlockstores", "lockreleases"} {
		b, err := fs.ReadFile(os.DirFS(root), "config/crd/bases/redlease.io_"+name+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &crd.Object); err != nil {
			t.Fatal(err)
		}
		if name == "distributedlocks" {
			dropRules(crd.Object, drop)
		}
		if err := env.Client.Create(ctx, crd); err != nil {
			t.Fatalf("installing the CRD %s: %v", name, err)
		}
	}
	for { // until the API server serves the kind
		err := env.Client.List(ctx, &v1alpha1.DistributedLockList{})
		if err == nil {
			err = env.Client.List(ctx, &v1alpha1.ClusterLockStoreList{})
		}
		if err == nil {
			return env
		}
		if ctx.Err() != nil {
			t.Fatalf("the CRD was not served within %v: %v", waitTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dropRules removes, everywhere in a schema, the x-kubernetes-validations
// whose message contains one of drop.
func dropRules(v any, drop []string) {
	switch v := v.(type) {
	case map[string]any:
		if rules, ok := v["x-kubernetes-validations"].([]any); ok {
			kept := []any{}
			for _, r := range rules {
				if !ruleMatches(r, drop) {
					kept = append(kept, r)
				}
			}
			v["x-kubernetes-validations"] = kept
		}
		for _, child := range v {
			dropRules(child, drop)
		}
	case []any:
		for _, child := range v {
			dropRules(child, drop)
		}
	}
}

func ruleMatches(rule any, drop []string) bool {
	m, _ := rule.(map[string]any)
	text := fmt.Sprint(m["message"], m["messageExpression"])
	for _, d := range drop {
		if strings.Contains(text, d) {
			return true
		}
	}
	return false
}

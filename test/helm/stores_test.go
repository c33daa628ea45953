package helm_test

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/redlease/redlease/api/v1alpha1"
)

// storesValues is the multi-tenant value set of `make helm-lint`.
const storesValues = "ci/stores-values.yaml"

// TestEgressValuesReachTheManager: allowedRedisCIDRs and allowInlineLocks
// become --allowed-redis-cidrs and --allow-inline-locks; the defaults are
// the manager's own (any network, inline locks served).
func TestEgressValuesReachTheManager(t *testing.T) {
	t.Parallel()
	args := managerArgs(t, manager(t, deployment(t, render(t))))
	if _, ok := args["allowed-redis-cidrs"]; ok {
		t.Errorf("--allowed-redis-cidrs=%q by default, want it absent (any network)", args["allowed-redis-cidrs"])
	}
	if args["allow-inline-locks"] != "true" {
		t.Errorf("--allow-inline-locks = %q by default, want true", args["allow-inline-locks"])
	}
	args = managerArgs(t, manager(t, deployment(t, render(t, "--set", "controller.allowedRedisCIDRs={10.20.0.0/16,fd00::/8},controller.allowInlineLocks=false"))))
	if args["allowed-redis-cidrs"] != "10.20.0.0/16,fd00::/8" || args["allow-inline-locks"] != "false" {
		t.Errorf("--allowed-redis-cidrs=%q --allow-inline-locks=%q, want 10.20.0.0/16,fd00::/8 and false", args["allowed-redis-cidrs"], args["allow-inline-locks"])
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "controller.allowedRedisCIDRs={10.20.0.0}"); err == nil || !strings.Contains(err.Error(), "/controller/allowedRedisCIDRs/0") {
		t.Errorf("a CIDR without a prefix length: err = %v, want the schema to name it", err)
	}
}

// TestAggregatedRoles: view reads locks and LockStores, edit writes locks,
// admin writes LockStores; none of them reaches ClusterLockStores, Secrets
// or the status subresources' writes (cluster admins own stores, the
// controller owns status).
func TestAggregatedRoles(t *testing.T) {
	t.Parallel()
	m := render(t)
	role := func(name string) *rbacv1.ClusterRole {
		return into[rbacv1.ClusterRole](t, m.must("ClusterRole", "", name))
	}
	view, edit, admin := role(viewRole), role(editRole), role(adminRole)
	for name, r := range map[string]*rbacv1.ClusterRole{viewRole: view, editRole: edit, adminRole: admin} {
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if strings.HasPrefix(res, "clusterlockstores") || res == "secrets" || res == "*" {
					t.Errorf("%s grants %v on %s: stores and Secrets stay with cluster admins and the controller", name, rule.Verbs, res)
				}
				if strings.HasSuffix(res, "/status") && slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					t.Errorf("%s grants %v on %s: only the controller writes status", name, rule.Verbs, res)
				}
			}
		}
	}
	aggregates := func(r *rbacv1.ClusterRole, to ...string) {
		t.Helper()
		for _, k := range []string{"view", "edit", "admin"} {
			got := r.Labels["rbac.authorization.k8s.io/aggregate-to-"+k] == "true"
			if got != slices.Contains(to, k) {
				t.Errorf("%s aggregate-to-%s = %v, want %v", r.Name, k, got, !got)
			}
		}
	}
	aggregates(view, "view", "edit", "admin")
	aggregates(edit, "edit", "admin")
	aggregates(admin, "admin")
	for _, c := range []struct {
		r        *rbacv1.ClusterRole
		resource string
		verbs    []string
		want     bool
	}{
		{view, "distributedlocks", []string{"get", "list", "watch"}, true},
		{view, "lockstores", []string{"get", "list", "watch"}, true},
		{view, "distributedlocks", []string{"create"}, false},
		{edit, "distributedlocks", []string{"create", "update", "patch", "delete"}, true},
		{edit, "lockstores", []string{"create"}, false},
		{admin, "lockstores", []string{"create", "update", "patch", "delete"}, true},
		// Break-glass (LockRelease): admin requests it, edit and view
		// only read the record.
		{admin, "lockreleases", []string{"create", "delete"}, true},
		{view, "lockreleases", []string{"get", "list", "watch"}, true},
		{edit, "lockreleases", []string{"create"}, false},
		{view, "lockreleases", []string{"create"}, false},
	} {
		if got := grants(c.r.Rules, v1alpha1.GroupVersion.Group, c.resource, c.verbs...); got != c.want {
			t.Errorf("%s grants %v on %s = %v, want %v", c.r.Name, c.verbs, c.resource, got, c.want)
		}
	}
	if m := render(t, "--set", "aggregatedRoles.enabled=false"); m.find("ClusterRole", "", viewRole) != nil {
		t.Error("aggregatedRoles.enabled=false still renders the aggregated roles")
	}
}

// TestClusterLockStoreFromValues: off by default; on, the store carries the
// spec as given and is kept on uninstall. On an install (the CRD may come
// with the release, so the kind may be unknown) it is a post-install hook
// carrying the release's ownership metadata, so upgrades adopt it; on an
// upgrade, and always with installHook=false (Argo CD, helm template |
// kubectl apply), it is an ordinary release object. In every case it is in
// Argo CD sync wave 1 and skips Argo CD's dry run while the CRD is missing.
func TestClusterLockStoreFromValues(t *testing.T) {
	t.Parallel()
	if m := render(t); len(m.ofKind("ClusterLockStore")) != 0 {
		t.Fatal("a ClusterLockStore by default")
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "clusterLockStore.enabled=true"); err == nil || !strings.Contains(err.Error(), "clusterLockStore.enabled needs clusterLockStore.spec") {
		t.Errorf("a store without a spec: err = %v, want a readable refusal", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		hook bool
	}{
		{"install", nil, true},
		{"upgrade", []string{"--is-upgrade"}, false},
		{"installHook=false", []string{"--set", "clusterLockStore.installHook=false"}, false},
		{"installHook=false, upgrade", []string{"--set", "clusterLockStore.installHook=false", "--is-upgrade"}, false},
	} {
		m := render(t, append([]string{"-f", chartDir(t) + "/" + storesValues}, tc.args...)...)
		checkChartStore(t, tc.name, into[v1alpha1.ClusterLockStore](t, m.must("ClusterLockStore", "", "shared")), tc.hook)
	}

	// clusterLockStore.annotations adds annotations and may move the sync
	// wave; Helm's (helm.sh/*, meta.helm.sh/*) are the chart's alone.
	extra := `clusterLockStore.annotations.argocd\.argoproj\.io/sync-wave=5,clusterLockStore.annotations.helm\.sh/resource-policy=delete,` +
		`clusterLockStore.annotations.helm\.sh/hook=pre-delete,clusterLockStore.annotations.meta\.helm\.sh/release-name=other,clusterLockStore.annotations.team=platform`
	for _, upgrade := range []bool{false, true} {
		args := []string{"-f", chartDir(t) + "/" + storesValues, "--set-string", extra}
		hook := "post-install"
		if upgrade {
			args, hook = append(args, "--is-upgrade"), ""
		}
		ann := render(t, args...).must("ClusterLockStore", "", "shared").GetAnnotations()
		if ann["argocd.argoproj.io/sync-wave"] != "5" || ann["team"] != "platform" || ann[keepPolicy] != "keep" || ann["helm.sh/hook"] != hook ||
			(upgrade && ann["meta.helm.sh/release-name"] != "") || (!upgrade && ann["meta.helm.sh/release-name"] != release) {
			t.Errorf("clusterLockStore.annotations (upgrade %v): %v", upgrade, ann)
		}
	}
}

// checkChartStore checks the chart's ClusterLockStore rendered from the
// stores values: its spec, keep policy, Argo CD annotations and, when hook,
// the install hook's annotations and ownership metadata.
func checkChartStore(t *testing.T, name string, cs *v1alpha1.ClusterLockStore, hook bool) {
	t.Helper()
	if cs.Spec.Redis.Mode != v1alpha1.RedisModeSentinel || cs.Spec.Tenants == nil || cs.Spec.Tenants.Isolation != v1alpha1.IsolationACL ||
		cs.Spec.ControllerAuth == nil || cs.Spec.ControllerAuth.PasswordSecretRef.Namespace != "redis" {
		t.Errorf("%s: spec = %+v, want the values' spec", name, cs.Spec)
	}
	ann := cs.Annotations
	if ann[keepPolicy] != "keep" {
		t.Errorf("%s: %s = %q, want keep", name, keepPolicy, ann[keepPolicy])
	}
	if ann["argocd.argoproj.io/sync-wave"] != "1" || ann["argocd.argoproj.io/sync-options"] != "SkipDryRunOnMissingResource=true" {
		t.Errorf("%s: Argo CD annotations %v, want sync wave 1 and SkipDryRunOnMissingResource=true", name, ann)
	}
	if got, want := ann["helm.sh/hook"], map[bool]string{true: "post-install"}[hook]; got != want {
		t.Errorf("%s: helm.sh/hook = %q, want %q", name, got, want)
	}
	if !hook {
		return
	}
	if ann["meta.helm.sh/release-name"] != release || ann["meta.helm.sh/release-namespace"] != namespace || cs.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the install hook lacks the release's ownership metadata (upgrades could not adopt it): %v %v", ann, cs.Labels)
	}
	if ann["helm.sh/hook-delete-policy"] != "hook-failed" {
		t.Errorf("hook-delete-policy = %q, want hook-failed (the default deletes and re-creates the store, and with it every tenant's Redis user)", ann["helm.sh/hook-delete-policy"])
	}
}

// TestClusterLockStoreSameWithoutAPIServer: the chart renders the same
// objects whether or not the API server knows ClusterLockStores: `helm
// template` (Argo CD's rendered manifests) and `helm template --api-versions
// redlease.io/v1alpha1/ClusterLockStore` are identical, for the install
// hook and for ordinary objects (installHook=false, upgrades); no template
// of the store reads .Capabilities.
func TestClusterLockStoreSameWithoutAPIServer(t *testing.T) {
	t.Parallel()
	tpl, err := readFile(filepath.Join(chartDir(t), "templates", "clusterlockstore.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tpl), ".Capabilities") {
		t.Error("templates/clusterlockstore.yaml reads .Capabilities: what it renders depends on the API server")
	}
	stores := "-f=" + chartDir(t) + "/" + storesValues
	for _, args := range [][]string{
		{stores},
		{stores, "--is-upgrade"},
		{stores, "--set", "clusterLockStore.installHook=false"},
		{stores, "--set", "watchNamespaces={billing},podRole.create=true,podRole.namespaces={billing}"},
	} {
		without, err := helmTemplate(t, chartDir(t), args...)
		if err != nil {
			t.Fatal(err)
		}
		with, err := helmTemplate(t, chartDir(t), append(args, "--api-versions", "redlease.io/v1alpha1/ClusterLockStore",
			"--api-versions", "redlease.io/v1alpha1/LockStore", "--api-versions", "redlease.io/v1alpha1/DistributedLock")...)
		if err != nil {
			t.Fatal(err)
		}
		a, b := objectSet(t, without), objectSet(t, with)
		if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
			t.Errorf("%v: the objects differ with the API server knowing the kinds:\nwithout: %v\nwith:    %v", args, slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
			continue
		}
		for k, o := range a {
			if !reflect.DeepEqual(o, b[k]) {
				t.Errorf("%v: %s differs with the API server knowing the kinds:\nwithout: %v\nwith:    %v", args, k, o, b[k])
			}
		}
		if _, ok := a["ClusterLockStore//shared"]; !ok {
			t.Errorf("%v: no ClusterLockStore rendered", args)
		}
	}
}

// objectSet parses a rendering into kind/namespace/name -> object.
func objectSet(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	objs, err := parseDocs(out)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]map[string]any{}
	for _, o := range objs {
		set[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return set
}

// TestNetworkPolicy: off by default; on, the manager pods accept traffic
// only on the health and metrics ports (metrics from metricsFrom), and
// reach only DNS, the API server's ports and the Redis ports at the same
// networks --allowed-redis-cidrs allows.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	if m := render(t); len(m.ofKind("NetworkPolicy")) != 0 {
		t.Fatal("a NetworkPolicy by default")
	}
	m := render(t, "-f", chartDir(t)+"/"+storesValues)
	np := into[networkingv1.NetworkPolicy](t, m.must("NetworkPolicy", namespace, managerName))
	if got := np.Spec.PodSelector.MatchLabels; !mapsSubset(got, deployment(t, m).Spec.Template.Labels) || len(got) == 0 {
		t.Errorf("podSelector %v does not select the manager pods", got)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policyTypes = %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	ingress := map[string][]networkingv1.NetworkPolicyPeer{}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			ingress[p.Port.String()] = r.From
		}
	}
	if len(ingress) != 2 || ingress["health"] != nil || len(ingress["metrics"]) != 1 || ingress["metrics"][0].NamespaceSelector == nil {
		t.Errorf("ingress = %+v, want health open and metrics from the monitoring namespace only", np.Spec.Ingress)
	}
	egress := map[string][]string{} // port -> CIDRs ("any" when no peers)
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			cidrs := []string{"any"}
			if len(r.To) > 0 {
				cidrs = nil
				for _, to := range r.To {
					cidrs = append(cidrs, to.IPBlock.CIDR)
				}
			}
			egress[p.Port.String()+"/"+string(*p.Protocol)] = cidrs
		}
	}
	want := map[string][]string{
		"53/UDP": {"any"}, "53/TCP": {"any"},
		"443/TCP": {"10.0.0.1/32"}, "6443/TCP": {"10.0.0.1/32"},
		"6379/TCP": {"10.20.0.0/16"}, "26379/TCP": {"10.20.0.0/16"},
	}
	for k, v := range want {
		if !slices.Equal(egress[k], v) {
			t.Errorf("egress %s = %v, want %v", k, egress[k], v)
		}
	}
	if len(egress) != len(want) {
		t.Errorf("egress = %v, want exactly %v", egress, want)
	}
}

func mapsSubset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

package helm_test

import (
	"flag"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/redlease/redlease/api/v1alpha1"
)

const (
	managerName = "redlease-controller-manager"
	managerRole = "redlease-manager-role"
	leaderRole  = "redlease-leader-election-role"
	metricsAuth = "redlease-metrics-auth-role"
	metricsRead = "redlease-metrics-reader"
	metricsSvc  = "redlease-controller-manager-metrics"
	crdName     = "distributedlocks.redlease.io"
	keepPolicy  = "helm.sh/resource-policy"
	dashboardCM = "redlease-dashboard"
	viewRole    = "redlease-view"
	editRole    = "redlease-edit"
	adminRole   = "redlease-admin"
	// managerClusterRole holds the manager's cluster-scoped rules when
	// watchNamespaces puts the rest in Roles.
	managerClusterRole = "redlease-manager-cluster-role"
	// managerControllers are the controller-runtime controller names the
	// manager registers (controllers/watches.go: Named("distributedlock")
	// and Named(string(kind)) for the stores), as a PromQL regex.
	managerControllers = "distributedlock|LockStore|ClusterLockStore"
	generatedCRD       = "config/crd/bases"
	generatedRBA       = "config/rbac/role.yaml"
)

// TestDefaults renders the default values: every expected object is there,
// nothing optional is, namespaced objects are in the release namespace, and
// each object converts strictly to its Kubernetes type. Each subtest checks
// one part of the one rendering.
func TestDefaults(t *testing.T) {
	t.Parallel()
	m := render(t)
	t.Run("objects", func(t *testing.T) { checkDefaultObjects(t, m) })
	t.Run("namespaces, labels and types", func(t *testing.T) { checkDefaultMetadata(t, m) })
	t.Run("deployment", func(t *testing.T) { checkDefaultDeployment(t, m) })
	t.Run("manager args", func(t *testing.T) { checkDefaultArgs(t, m) })
	t.Run("POD_NAMESPACE", func(t *testing.T) { checkPodNamespaceEnv(t, m) })
	t.Run("metrics service and selectors", func(t *testing.T) { checkDefaultSelectors(t, m) })
	t.Run("bindings", func(t *testing.T) { checkBindingSubjects(t, m) })
	t.Run("leader election", func(t *testing.T) { checkLeaderElectionRole(t, m) })
}

// checkDefaultObjects: the default values render exactly the expected
// objects, nothing optional.
func checkDefaultObjects(t *testing.T, m *manifest) {
	t.Helper()
	want := map[string][]string{ // kind -> "namespace/name"
		"CustomResourceDefinition": {"/clusterlockstores.redlease.io", "/" + crdName, "/lockreleases.redlease.io", "/lockstores.redlease.io"},
		// Break-glass: the requester policy (TestLockReleaseRequesterPolicy in controllers).
		"ValidatingAdmissionPolicy":        {"/redlease-lockrelease-requester"},
		"ValidatingAdmissionPolicyBinding": {"/redlease-lockrelease-requester"},
		"ServiceAccount":                   {namespace + "/" + managerName},
		"ClusterRole":                      {"/" + managerRole, "/" + metricsAuth, "/" + metricsRead, "/" + viewRole, "/" + editRole, "/" + adminRole},
		"ClusterRoleBinding":               {"/redlease-manager-rolebinding", "/redlease-metrics-auth-rolebinding"},
		"Role":                             {namespace + "/" + leaderRole},
		"RoleBinding":                      {namespace + "/redlease-leader-election-rolebinding"},
		"Service":                          {namespace + "/" + metricsSvc},
		"Deployment":                       {namespace + "/" + managerName},
	}
	// The helm test hook (TestInstallCheckHook).
	want["ServiceAccount"] = append(want["ServiceAccount"], namespace+"/"+testSA)
	want["Role"] = append(want["Role"], namespace+"/"+testSA)
	want["RoleBinding"] = append(want["RoleBinding"], namespace+"/"+testSA)
	want["Pod"] = []string{namespace + "/" + testPod}
	// The post-delete hook (TestUninstallHook).
	want["ServiceAccount"] = append(want["ServiceAccount"], namespace+"/"+uninstallHook)
	want["ClusterRole"] = append(want["ClusterRole"], "/"+uninstallHook)
	want["ClusterRoleBinding"] = append(want["ClusterRoleBinding"], "/"+uninstallHook)
	want["Job"] = []string{namespace + "/" + uninstallHook}
	got := map[string][]string{}
	for _, o := range m.objs {
		got[o.GetKind()] = append(got[o.GetKind()], o.GetNamespace()+"/"+o.GetName())
	}
	for kind := range got {
		slices.Sort(got[kind])
	}
	for kind := range want {
		slices.Sort(want[kind])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default values render\n  %v\nwant\n  %v", got, want)
	}
}

// checkDefaultMetadata: namespaced objects are in the release namespace,
// cluster-scoped ones in none, every object carries the chart's labels and
// converts strictly to its Kubernetes type.
func checkDefaultMetadata(t *testing.T, m *manifest) {
	t.Helper()
	clusterScoped := []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	for _, o := range m.objs {
		if ns := o.GetNamespace(); slices.Contains(clusterScoped, o.GetKind()) != (ns == "") || (ns != "" && ns != namespace) {
			t.Errorf("%s %s has namespace %q", o.GetKind(), o.GetName(), ns)
		}
		if l := o.GetLabels(); l["app.kubernetes.io/instance"] != release || l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s %s lacks the chart's labels: %v", o.GetKind(), o.GetName(), l)
		}
		checkTyped(t, o)
	}
}

// checkDefaultDeployment: the manager Deployment's pod and container.
func checkDefaultDeployment(t *testing.T, m *manifest) {
	t.Helper()
	d := deployment(t, m)
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != managerName {
		t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, managerName)
	}
	c := manager(t, d)
	if want := "ghcr.io/redlease/manager:" + chartAppVersion(t); c.Image != want {
		t.Errorf("image = %q, want %q (tag defaults to the chart's appVersion)", c.Image, want)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %q", c.ImagePullPolicy)
	}
	if !slices.Equal(c.Command, []string{"/manager"}) {
		t.Errorf("command = %v, want [/manager] (the binary's path in the image)", c.Command)
	}
	checkRestricted(t, d)
	checkProbes(t, c)
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %v: want cpu and memory requests and a memory limit", c.Resources)
	}
}

// checkDefaultArgs: the manager's flags for the default values.
func checkDefaultArgs(t *testing.T, m *manifest) {
	t.Helper()
	args := managerArgs(t, manager(t, deployment(t, m)))
	wantArgs := map[string]string{
		"metrics-bind-address":      ":8443",
		"metrics-secure":            "true",
		"health-probe-bind-address": ":8081",
		"leader-elect":              "",
		"leader-election-id":        "redlease-manager.redlease.io",
		"leader-election-namespace": namespace,
		"probe-interval":            "10s",
		"zap-log-level":             "info",
	}
	for k, v := range wantArgs {
		if got, ok := args[k]; !ok || got != v {
			t.Errorf("--%s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := args["watch-namespaces"]; ok {
		t.Error("--watch-namespaces set without watchNamespaces")
	}
}

// checkPodNamespaceEnv: the manager learns its name and namespace from the
// downward API (POD_NAME, POD_NAMESPACE), whatever extraEnv adds.
func checkPodNamespaceEnv(t *testing.T, m *manifest) {
	t.Helper()
	c := manager(t, deployment(t, m))
	for name, field := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		var env *corev1.EnvVar
		for i := range c.Env {
			if c.Env[i].Name == name {
				env = &c.Env[i]
			}
		}
		if env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != field {
			t.Errorf("%s env = %+v, want fieldRef %s", name, env, field)
		}
	}
}

// checkDefaultSelectors: the metrics Service selects the manager pods and
// targets their metrics port; the Deployment's selector matches its pods.
func checkDefaultSelectors(t *testing.T, m *manifest) {
	t.Helper()
	checkPodNamespaceEnv(t, m)
	d := deployment(t, m)
	c := manager(t, d)
	svc := into[corev1.Service](t, m.must("Service", namespace, metricsSvc))
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("metrics Service selector %v does not match the pod labels %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" || svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports = %+v, want https 8443 -> metrics", svc.Spec.Ports)
	}
	if port(c, "metrics") != 8443 {
		t.Errorf("container port metrics = %d, want 8443", port(c, "metrics"))
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector does not match its pod template (%v)", err)
	}
}

// checkBindingSubjects: bindings name the ServiceAccount that the Deployment
// runs as (the test hook's bind its own: TestInstallCheckHook).
func checkBindingSubjects(t *testing.T, m *manifest) {
	t.Helper()
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range m.ofKind(kind) {
			if isHook(o) {
				continue
			}
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			want := []any{map[string]any{"kind": "ServiceAccount", "name": managerName, "namespace": namespace}}
			if !reflect.DeepEqual(subjects, want) {
				t.Errorf("%s %s subjects = %v, want %v", kind, o.GetName(), subjects, want)
			}
		}
	}
}

// checkLeaderElectionRole: Leases and Events in the release namespace only.
func checkLeaderElectionRole(t *testing.T, m *manifest) {
	t.Helper()
	le := into[rbacv1.Role](t, m.must("Role", namespace, leaderRole))
	if !grants(le.Rules, "coordination.k8s.io", "leases", "get", "create", "update") || !grants(le.Rules, "", "events", "create", "patch") {
		t.Errorf("leader election Role rules = %+v", le.Rules)
	}
}

// TestReleaseName: another release name prefixes every name.
func TestReleaseName(t *testing.T) {
	t.Parallel()
	m := renderRelease(t, "locks")
	m.must("Deployment", namespace, "locks-redlease-controller-manager")
	m.must("ClusterRole", "", "locks-redlease-manager-role")
	d := deployment(t, m)
	if d.Spec.Template.Spec.ServiceAccountName != "locks-redlease-controller-manager" {
		t.Errorf("serviceAccountName = %q", d.Spec.Template.Spec.ServiceAccountName)
	}
	if got := managerArgs(t, manager(t, d))["leader-election-id"]; got != "locks-redlease-manager.redlease.io" {
		t.Errorf("--leader-election-id = %q: two releases in one namespace must not share a Lease", got)
	}
}

// TestCRDMatchesGenerated: the chart's CRDs are the generated ones, byte for
// byte in files/crds and object for object once rendered.
func TestCRDMatchesGenerated(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	gen, err := filepath.Glob(filepath.Join(root, generatedCRD, "*.yaml"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("no generated CRDs in %s (%v)", generatedCRD, err)
	}
	copies, _ := filepath.Glob(filepath.Join(chartDir(t), "files", "crds", "*.yaml"))
	if names(gen) != names(copies) {
		t.Errorf("charts/redlease/files/crds holds %s, config/crd/bases %s: run `make manifests`", names(copies), names(gen))
	}
	m := render(t)
	for _, path := range gen {
		rel, _ := filepath.Rel(root, path)
		want := readYAML(t, rel)
		copyData, err := readFile(filepath.Join(chartDir(t), "files", "crds", filepath.Base(path)))
		genData, _ := readFile(path)
		if err != nil || string(copyData) != string(genData) {
			t.Errorf("charts/redlease/files/crds/%s differs from %s: run `make manifests`", filepath.Base(path), rel)
		}
		name, _, _ := unstructured.NestedString(want, "metadata", "name")
		got := m.must("CustomResourceDefinition", "", name)
		if !reflect.DeepEqual(normalize(t, got.Object["spec"]), normalize(t, want["spec"])) {
			t.Errorf("rendered CRD %s's spec differs from %s", name, rel)
		}
		wantAnn, _, _ := unstructured.NestedStringMap(want, "metadata", "annotations")
		for k, v := range wantAnn {
			if got.GetAnnotations()[k] != v {
				t.Errorf("rendered CRD %s: annotation %s = %q, want %q", name, k, got.GetAnnotations()[k], v)
			}
		}
		into[apiextensionsv1.CustomResourceDefinition](t, got)
	}
}

func names(paths []string) string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestCRDToggles: crds.enabled=false renders no CRD; crds.keep adds (by
// default) or omits the resource policy annotation.
func TestCRDToggles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args     []string
		crd      bool
		keepNote bool
	}{
		{nil, true, true},
		{[]string{"--set", "crds.keep=true"}, true, true},
		{[]string{"--set", "crds.keep=false"}, true, false},
		{[]string{"--set", "crds.enabled=false"}, false, false},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			m := render(t, tc.args...)
			crds := m.ofKind("CustomResourceDefinition")
			if !tc.crd {
				if len(crds) != 0 {
					t.Fatalf("crds.enabled=false renders %d CRDs", len(crds))
				}
				if len(m.ofKind("Deployment")) != 1 {
					t.Fatal("crds.enabled=false lost the Deployment")
				}
				return
			}
			if len(crds) != 4 {
				t.Fatalf("%d CRDs rendered, want 4 (DistributedLock, LockStore, ClusterLockStore, LockRelease)", len(crds))
			}
			got, ok := crds[0].GetAnnotations()[keepPolicy]
			for _, c := range crds[1:] {
				if g, o := c.GetAnnotations()[keepPolicy]; g != got || o != ok {
					t.Errorf("%s: annotation %s = %q, the first CRD's %q: all CRDs follow crds.keep alike", c.GetName(), keepPolicy, g, got)
				}
			}
			if tc.keepNote && got != "keep" {
				t.Errorf("annotation %s = %q (present %v), want keep", keepPolicy, got, ok)
			}
			if !tc.keepNote && ok {
				t.Errorf("crds.keep=false still annotates %s=%q", keepPolicy, got)
			}
		})
	}
}

// TestClusterRoleMatchesGenerated: the manager's ClusterRole has exactly the
// rules controller-gen generated into config/rbac/role.yaml.
func TestClusterRoleMatchesGenerated(t *testing.T) {
	t.Parallel()
	copyData, err := readFile(filepath.Join(chartDir(t), "files", "role.yaml"))
	genData, _ := readFile(filepath.Join(repoRoot(t), generatedRBA))
	if err != nil || string(copyData) != string(genData) {
		t.Errorf("charts/redlease/files/role.yaml differs from %s: run `make manifests`", generatedRBA)
	}
	want := generatedRules(t)
	m := render(t)
	cr := m.must("ClusterRole", "", managerRole)
	if !reflect.DeepEqual(normalize(t, cr.Object["rules"]), want) {
		t.Errorf("ClusterRole %s rules = %v, want %s's %v", managerRole, cr.Object["rules"], generatedRBA, want)
	}
	crb := into[rbacv1.ClusterRoleBinding](t, m.must("ClusterRoleBinding", "", "redlease-manager-rolebinding"))
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != managerRole {
		t.Errorf("ClusterRoleBinding roleRef = %+v", crb.RoleRef)
	}
}

func generatedRules(t *testing.T) any {
	t.Helper()
	rules := readYAML(t, generatedRBA)["rules"]
	if rules == nil {
		t.Fatalf("%s has no rules", generatedRBA)
	}
	return normalize(t, rules)
}

// TestWatchNamespaces: with watchNamespaces the generated rules become a Role
// and RoleBinding in each namespace, no ClusterRole grants them, and the
// manager watches only those namespaces.
func TestWatchNamespaces(t *testing.T) {
	t.Parallel()
	want := generatedRules(t)
	m := render(t, "--set", "watchNamespaces={billing,reports}")
	for _, ns := range []string{"billing", "reports"} {
		r := m.must("Role", ns, managerRole)
		if !reflect.DeepEqual(normalize(t, r.Object["rules"]), want) {
			t.Errorf("Role %s/%s rules = %v, want %v", ns, managerRole, r.Object["rules"], want)
		}
		rb := into[rbacv1.RoleBinding](t, m.must("RoleBinding", ns, "redlease-manager-rolebinding"))
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != managerRole {
			t.Errorf("RoleBinding %s roleRef = %+v", ns, rb.RoleRef)
		}
		if len(rb.Subjects) != 1 || rb.Subjects[0].Name != managerName || rb.Subjects[0].Namespace != namespace {
			t.Errorf("RoleBinding %s subjects = %+v, want the ServiceAccount %s/%s", ns, rb.Subjects, namespace, managerName)
		}
	}
	if m.find("ClusterRole", "", managerRole) != nil || m.find("ClusterRoleBinding", "", "redlease-manager-rolebinding") != nil {
		t.Error("watchNamespaces still renders the manager's ClusterRole or ClusterRoleBinding")
	}
	checkNamespacedClusterRoles(t, m)
	args := managerArgs(t, manager(t, deployment(t, m)))
	if args["watch-namespaces"] != "billing,reports" {
		t.Errorf("--watch-namespaces = %q, want billing,reports", args["watch-namespaces"])
	}

	// With plain-HTTP metrics, no aggregated roles and no break-glass
	// requester policy, nothing cluster-scoped is left but the CRDs, the
	// manager's cluster-scoped rules and the uninstall hook's
	// (ClusterLockStores are cluster-scoped).
	m = render(t, "--set", "watchNamespaces={billing}", "--set", "metrics.secure=false,aggregatedRoles.enabled=false,breakglass.requesterPolicy=false")
	for _, o := range m.objs {
		if o.GetNamespace() == "" && o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetName(), "redlease-manager-cluster-role") && o.GetName() != uninstallHook {
			t.Errorf("watchNamespaces with metrics.secure=false renders cluster-scoped %s %s", o.GetKind(), o.GetName())
		}
	}
}

// checkNamespacedClusterRoles: what stays cluster-wide with watchNamespaces
// is the secure-metrics ClusterRoles (TokenReviews and SubjectAccessReviews
// are cluster-scoped), the aggregated user roles, and the manager's
// cluster-scoped rules (Namespaces, ClusterLockStores), which no Role can
// grant. None reaches Secrets or namespaced redlease resources cluster-wide.
func checkNamespacedClusterRoles(t *testing.T, m *manifest) {
	t.Helper()
	for _, cr := range m.ofKind("ClusterRole") {
		role := into[rbacv1.ClusterRole](t, cr)
		switch cr.GetName() {
		case metricsAuth, metricsRead, viewRole, editRole, adminRole:
			if cr.GetName() == metricsAuth || cr.GetName() == metricsRead {
				for _, r := range role.Rules {
					if slices.Contains(r.APIGroups, "redlease.io") || slices.Contains(r.Resources, "secrets") {
						t.Errorf("ClusterRole %s grants %+v", cr.GetName(), r)
					}
				}
			}
		case managerClusterRole:
			checkManagerClusterRole(t, m, role)
		case uninstallHook: // ClusterLockStores only (TestUninstallHook)
		default:
			t.Errorf("unexpected ClusterRole %s with watchNamespaces", cr.GetName())
		}
	}
}

// checkManagerClusterRole: the manager's ClusterRole of a namespaced
// install grants what serving ClusterLockStores needs, on cluster-scoped
// resources only, and is bound to the manager.
func checkManagerClusterRole(t *testing.T, m *manifest, role *rbacv1.ClusterRole) {
	t.Helper()
	clusterScoped := []string{"namespaces", "clusterlockstores", "clusterlockstores/status", "clusterlockstores/finalizers"}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if !slices.Contains(clusterScoped, res) {
				t.Errorf("ClusterRole %s grants %s cluster-wide: only cluster-scoped resources belong there", role.Name, res)
			}
		}
	}
	for _, need := range []struct{ group, resource, verb string }{
		{"", "namespaces", "watch"}, {"redlease.io", "clusterlockstores", "watch"}, {"redlease.io", "clusterlockstores", "patch"},
		{"redlease.io", "clusterlockstores/status", "patch"}, {"redlease.io", "clusterlockstores/finalizers", "update"},
	} {
		if !grants(role.Rules, need.group, need.resource, need.verb) {
			t.Errorf("ClusterRole %s does not grant %s on %s: the manager could not serve ClusterLockStores", role.Name, need.verb, need.resource)
		}
	}
	rb := into[rbacv1.ClusterRoleBinding](t, m.must("ClusterRoleBinding", "", "redlease-manager-cluster-rolebinding"))
	if rb.RoleRef.Name != managerClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != managerName {
		t.Errorf("ClusterRoleBinding %s = %+v", rb.Name, rb)
	}
}

// TestReplicas: several replicas force leader election and add a
// PodDisruptionBudget and anti-affinity; one replica without leader election
// has neither.
func TestReplicas(t *testing.T) {
	t.Parallel()
	m := render(t, "--set", "replicaCount=3", "--set", "leaderElection.enabled=false")
	d := deployment(t, m)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
	}
	args := managerArgs(t, manager(t, d))
	for _, k := range []string{"leader-elect", "leader-election-id", "leader-election-namespace", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"} {
		if _, ok := args[k]; !ok {
			t.Errorf("replicaCount=3: no --%s (leader election is forced on with several replicas)", k)
		}
	}
	m.must("Role", namespace, leaderRole)
	pdb := into[policyv1.PodDisruptionBudget](t, m.must("PodDisruptionBudget", namespace, managerName))
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PDB spec = %+v, want minAvailable 1", pdb.Spec)
	}
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PDB selector %v does not select the manager pods (%v)", pdb.Spec.Selector, err)
	}
	if a := d.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil {
		t.Error("replicaCount=3: no pod anti-affinity spreading the replicas")
	}

	m = render(t, "--set", "replicaCount=2", "--set", "podDisruptionBudget.maxUnavailable=1")
	pdb = into[policyv1.PodDisruptionBudget](t, m.must("PodDisruptionBudget", namespace, managerName))
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PDB spec = %+v, want maxUnavailable 1 only", pdb.Spec)
	}
	if m = render(t, "--set", "replicaCount=3", "--set", "podDisruptionBudget.enabled=false"); len(m.ofKind("PodDisruptionBudget")) != 0 {
		t.Error("podDisruptionBudget.enabled=false still renders a PDB")
	}

	m = render(t, "--set", "leaderElection.enabled=false")
	args = managerArgs(t, manager(t, deployment(t, m)))
	if _, ok := args["leader-elect"]; ok {
		t.Error("replicaCount=1 with leaderElection.enabled=false passes --leader-elect")
	}
	if m.find("Role", namespace, leaderRole) != nil || len(m.ofKind("PodDisruptionBudget")) != 0 {
		t.Error("one replica without leader election renders a leader election Role or a PDB")
	}
}

// TestValuesReachTheManager: tuning values become flags, extra args and env
// are appended, scheduling values land in the pod.
func TestValuesReachTheManager(t *testing.T) {
	t.Parallel()
	m := render(t,
		"--set", "controller.probeInterval=5s,controller.probeTimeout=3s,controller.redisTimeout=500ms",
		"--set", "controller.redisPoolSize=8,controller.maxConcurrentReconciles=16,controller.gracefulShutdownTimeout=20s",
		"--set", "logging.level=debug,logging.encoder=console",
		"--set", "extraArgs={--zap-stacktrace-level=panic}",
		"--set", "extraEnv[0].name=GOMAXPROCS", "--set-string", "extraEnv[0].value=2",
		"--set", "image.registry=registry.example.com,image.repository=team/manager,image.tag=dev,image.pullPolicy=Always",
		"--set", "nodeSelector.role=infra,podAnnotations.team=platform,podLabels.team=platform",
		"--set", "tolerations[0].key=infra,tolerations[0].operator=Exists",
		"--set", "metrics.enabled=false,healthProbe.port=9440",
	)
	d := deployment(t, m)
	c := manager(t, d)
	args := managerArgs(t, c)
	for k, v := range map[string]string{
		"probe-interval": "5s", "probe-timeout": "3s", "redis-timeout": "500ms", "redis-pool-size": "8",
		"max-concurrent-reconciles": "16", "graceful-shutdown-timeout": "20s", "zap-log-level": "debug",
		"zap-encoder": "console", "zap-stacktrace-level": "panic", "metrics-bind-address": "0",
		"health-probe-bind-address": ":9440",
	} {
		if args[k] != v {
			t.Errorf("--%s = %q, want %q", k, args[k], v)
		}
	}
	if c.Image != "registry.example.com/team/manager:dev" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image = %q %q", c.Image, c.ImagePullPolicy)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMAXPROCS" && e.Value == "2" }) {
		t.Errorf("extraEnv missing from %v", c.Env)
	}
	pod := d.Spec.Template
	if pod.Spec.NodeSelector["role"] != "infra" || len(pod.Spec.Tolerations) != 1 || pod.Annotations["team"] != "platform" || pod.Labels["team"] != "platform" {
		t.Errorf("scheduling values missing: nodeSelector %v tolerations %v annotations %v labels %v", pod.Spec.NodeSelector, pod.Spec.Tolerations, pod.Annotations, pod.Labels)
	}
	if port(c, "health") != 9440 || port(c, "metrics") != 0 {
		t.Errorf("ports = %+v, want health 9440 and no metrics port", c.Ports)
	}
	checkProbes(t, c)
	if len(m.ofKind("Service")) != 0 || m.find("ClusterRole", "", metricsAuth) != nil {
		t.Error("metrics.enabled=false still renders the metrics Service or its auth ClusterRole")
	}

	m = render(t, "--set", "image.digest=sha256:"+strings.Repeat("ab", 32))
	if got := manager(t, deployment(t, m)).Image; got != "ghcr.io/redlease/manager:"+chartAppVersion(t)+"@sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("image with digest = %q", got)
	}

	m = render(t, "--set", "serviceAccount.create=false,serviceAccount.name=ops", "--set", "rbac.create=false")
	if len(m.ofKind("ServiceAccount")) != 0 || len(m.ofKind("ClusterRole")) != 0 || len(m.ofKind("Role")) != 0 {
		t.Errorf("serviceAccount.create=false, rbac.create=false still render %v", m.kinds())
	}
	if got := deployment(t, m).Spec.Template.Spec.ServiceAccountName; got != "ops" {
		t.Errorf("serviceAccountName = %q, want ops", got)
	}
}

// TestServiceMonitor: off by default; on, it selects the metrics Service's
// port with the scheme the manager serves.
func TestServiceMonitor(t *testing.T) {
	t.Parallel()
	if m := render(t); len(m.ofKind("ServiceMonitor")) != 0 {
		t.Fatal("a ServiceMonitor by default")
	}
	for _, secure := range []bool{true, false} {
		m := render(t, "--set", "serviceMonitor.enabled=true,serviceMonitor.labels.release=prom", "--set", "metrics.secure="+strconv.FormatBool(secure))
		sm := m.must("ServiceMonitor", namespace, managerName)
		if sm.GetAPIVersion() != "monitoring.coreos.com/v1" {
			t.Errorf("ServiceMonitor apiVersion = %s", sm.GetAPIVersion())
		}
		if sm.GetLabels()["release"] != "prom" {
			t.Errorf("serviceMonitor.labels not applied: %v", sm.GetLabels())
		}
		svc := into[corev1.Service](t, m.must("Service", namespace, metricsSvc))
		matchLabels, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		if len(matchLabels) == 0 || !labels.SelectorFromSet(matchLabels).Matches(labels.Set(svc.Labels)) {
			t.Errorf("ServiceMonitor selector %v does not match the metrics Service labels %v", matchLabels, svc.Labels)
		}
		if labels.SelectorFromSet(matchLabels).Matches(labels.Set(deployment(t, m).Spec.Template.Labels)) {
			t.Errorf("ServiceMonitor selector %v also matches the manager pods: it should select the metrics Service only", matchLabels)
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor endpoints = %v", endpoints)
		}
		ep := endpoints[0].(map[string]any)
		wantScheme := map[bool]string{true: "https", false: "http"}[secure]
		if ep["scheme"] != wantScheme || ep["port"] != svc.Spec.Ports[0].Name || ep["path"] != "/metrics" {
			t.Errorf("secure=%v: endpoint = %v, want scheme %s on Service port %q", secure, ep, wantScheme, svc.Spec.Ports[0].Name)
		}
		if _, hasTLS := ep["tlsConfig"]; hasTLS != secure {
			t.Errorf("secure=%v: tlsConfig present = %v", secure, hasTLS)
		}
		if ep["honorLabels"] != true {
			t.Errorf("endpoint honorLabels = %v, want true: the per-lock series' namespace label must survive the scrape", ep["honorLabels"])
		}
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "serviceMonitor.enabled=true,metrics.enabled=false"); err == nil || !strings.Contains(err.Error(), "serviceMonitor.enabled needs metrics.enabled") {
		t.Errorf("serviceMonitor without metrics: err = %v, want a readable refusal", err)
	}
}

// checkTyped converts built-in kinds strictly to their types.
func checkTyped(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	switch o.GetKind() {
	case "Deployment":
		into[appsv1.Deployment](t, o)
	case "Service":
		into[corev1.Service](t, o)
	case "ServiceAccount":
		into[corev1.ServiceAccount](t, o)
	case "ConfigMap":
		into[corev1.ConfigMap](t, o)
	case "ClusterRole":
		into[rbacv1.ClusterRole](t, o)
	case "ClusterRoleBinding":
		into[rbacv1.ClusterRoleBinding](t, o)
	case "Role":
		into[rbacv1.Role](t, o)
	case "RoleBinding":
		into[rbacv1.RoleBinding](t, o)
	case "PodDisruptionBudget":
		into[policyv1.PodDisruptionBudget](t, o)
	case "CustomResourceDefinition":
		into[apiextensionsv1.CustomResourceDefinition](t, o)
	case "NetworkPolicy":
		into[networkingv1.NetworkPolicy](t, o)
	case "ClusterLockStore":
		into[v1alpha1.ClusterLockStore](t, o)
	case "Pod":
		into[corev1.Pod](t, o)
	}
}

func deployment(t *testing.T, m *manifest) *appsv1.Deployment {
	t.Helper()
	ds := m.ofKind("Deployment")
	if len(ds) != 1 {
		t.Fatalf("%d Deployments rendered, want 1", len(ds))
	}
	return into[appsv1.Deployment](t, ds[0])
}

func manager(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("no manager container in %s", d.Name)
	return nil
}

func port(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// checkRestricted asserts the pod meets the "restricted" Pod Security
// Standard and the chart's stricter defaults (uid 65532, read-only root).
func checkRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	checkRestrictedPod(t, spec)
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		checkRestrictedContainer(t, c)
	}
}

// checkRestrictedPod is checkRestricted's pod-level part: security context,
// host namespaces, hostPath volumes.
func checkRestrictedPod(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod securityContext = %+v: want runAsNonRoot and runAsUser 65532", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: want seccompProfile RuntimeDefault")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("host namespaces in use")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
	}
}

// checkRestrictedContainer is checkRestricted's part for one container
// (init or not): its own security context.
func checkRestrictedContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("container %s has no securityContext", c.Name)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation not false", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: readOnlyRootFilesystem not true", c.Name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s is privileged", c.Name)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container %s capabilities = %+v: want drop ALL, add none", c.Name, sc.Capabilities)
	}
	if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		t.Errorf("container %s may run as root", c.Name)
	}
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault && sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
		t.Errorf("container %s seccomp profile %s", c.Name, sc.SeccompProfile.Type)
	}
}

// checkProbes: liveness on /healthz and readiness on /readyz, both on the
// named health port, which is where --health-probe-bind-address listens.
func checkProbes(t *testing.T, c *corev1.Container) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "health" {
			t.Errorf("probe for %s = %+v: want an HTTP GET on port health", name, p)
			continue
		}
		if p.PeriodSeconds < 1 || p.FailureThreshold < 1 {
			t.Errorf("probe %s timings = %+v", name, p)
		}
	}
	addr := managerArgs(t, c)["health-probe-bind-address"]
	if want := ":" + strconv.Itoa(int(port(c, "health"))); addr != want {
		t.Errorf("--health-probe-bind-address = %q, but the health port is %s", addr, want)
	}
}

var managerFlagRE = regexp.MustCompile(`flag\.(String|Bool|Int|Duration)Var\(&[^,]+,\s*"([a-z0-9-]+)"`)

// managerFlags maps every flag the manager defines (cmd/manager/main.go, and
// controller-runtime's zap flags) to its type.
func managerFlags(t *testing.T) map[string]string {
	t.Helper()
	src, err := readFile(filepath.Join(repoRoot(t), "cmd", "manager", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, m := range managerFlagRE.FindAllStringSubmatch(string(src), -1) {
		flags[m[2]] = m[1]
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags in cmd/manager/main.go: has its flag style changed?", len(flags))
	}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	(&zap.Options{}).BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) { flags[f.Name] = "zap" })
	return flags
}

// managerArgs parses the manager's args as --name[=value], failing on any
// flag the manager does not define or a value its type refuses.
func managerArgs(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	known := managerFlags(t)
	out := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" {
			t.Errorf("argument %q is not a --flag", a)
			continue
		}
		typ, ok := known[name]
		if !ok {
			t.Errorf("argument %q: the manager has no flag --%s", a, name)
		}
		var err error
		switch typ {
		case "Duration":
			_, err = time.ParseDuration(value)
		case "Int":
			_, err = strconv.Atoi(value)
		case "Bool":
			if strings.Contains(a, "=") {
				_, err = strconv.ParseBool(value)
			}
		}
		if err != nil {
			t.Errorf("argument %q: %v", a, err)
		}
		out[name] = value
	}
	return out
}

func grants(rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
			ok := true
			for _, v := range verbs {
				ok = ok && slices.Contains(r.Verbs, v)
			}
			if ok {
				return true
			}
		}
	}
	return false
}

package helm_test

import (
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redlease/redlease/internal/lockctl"
)

const (
	testSA        = "redlease-test"         // the test hook's ServiceAccount, Role(s) and binding(s)
	testPod       = "redlease-test-install" // the test hook's Pod
	uninstallHook = "redlease-uninstall"    // the post-delete hook's ServiceAccount, ClusterRole, binding and Job
)

// testHooks are the objects of the helm test hook, by kind.
func testHooks(t *testing.T, m *manifest) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range m.objs {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			if out[o.GetKind()] != nil {
				t.Fatalf("two test hooks of kind %s", o.GetKind())
			}
			out[o.GetKind()] = o
		}
	}
	return out
}

// TestInstallCheckHook: the chart's helm test hook runs `lockctl check
// install` from the lockctl image, with flags lockctl has, pointed at the
// manager's leader election Lease (or, without leader election, its
// Deployment) and the chart's ClusterLockStore, as a ServiceAccount of its
// own that may get exactly those objects and nothing else. Every piece is
// a test hook, replaced before each run and deleted when the test passed;
// RBAC comes before the Pod.
func TestInstallCheckHook(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		args      []string
		wantFlags []string
		wantRules map[string][]rbacv1.PolicyRule // kind -> rules
	}{
		{"defaults", nil,
			[]string{"--leader-election-lease=" + namespace + "/redlease-manager.redlease.io", "--timeout=2m"},
			map[string][]rbacv1.PolicyRule{"Role": {getOne("coordination.k8s.io", "leases", "redlease-manager.redlease.io")}}},
		{"leader election off", []string{"--set", "leaderElection.enabled=false,tests.timeout=30s"},
			[]string{"--manager-deployment=" + namespace + "/" + managerName, "--timeout=30s"},
			map[string][]rbacv1.PolicyRule{"Role": {getOne("apps", "deployments", managerName)}}},
		{"a ClusterLockStore and a NetworkPolicy", []string{"-f", chartDir(t) + "/" + storesValues, "--set", "leaderElection.id=locks-leader"},
			[]string{"--leader-election-lease=" + namespace + "/locks-leader", "--cluster-lock-store=shared", "--timeout=2m"},
			map[string][]rbacv1.PolicyRule{
				"Role":        {getOne("coordination.k8s.io", "leases", "locks-leader")},
				"ClusterRole": {getOne("redlease.io", "clusterlockstores", "shared")},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, tc.args...)
			hooks := testHooks(t, m)
			wantKinds := []string{"Pod", "Role", "RoleBinding", "ServiceAccount"}
			if tc.wantRules["ClusterRole"] != nil {
				wantKinds = append(wantKinds, "ClusterRole", "ClusterRoleBinding")
			}
			var kinds []string
			for k := range hooks {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			slices.Sort(wantKinds)
			if !slices.Equal(kinds, wantKinds) {
				t.Fatalf("test hooks %v, want %v", kinds, wantKinds)
			}
			checkHookAnnotations(t, hooks)
			pod := into[corev1.Pod](t, hooks["Pod"])
			checkTestPod(t, m, pod, tc.wantFlags)
			for kind, want := range tc.wantRules {
				checkHookRules(t, hooks, kind, want)
			}
		})
	}
}

func getOne(group, resource, name string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}, Verbs: []string{"get"}}
}

// checkHookAnnotations: every object is a test hook, deleted before it is
// created again and once the test passed (so no test permission outlives
// a run), RBAC weighted before the Pod; a failed Pod's log is printed.
func checkHookAnnotations(t *testing.T, hooks map[string]*unstructured.Unstructured) {
	t.Helper()
	for kind, o := range hooks {
		ann := o.GetAnnotations()
		policies := strings.Split(ann["helm.sh/hook-delete-policy"], ",")
		if !slices.Contains(policies, "before-hook-creation") || !slices.Contains(policies, "hook-succeeded") || slices.Contains(policies, "hook-failed") {
			t.Errorf("%s %s: hook-delete-policy %q, want before-hook-creation,hook-succeeded (a failed Pod stays for kubectl logs)", kind, o.GetName(), ann["helm.sh/hook-delete-policy"])
		}
		wantWeight := "-1"
		if kind == "Pod" {
			wantWeight = "0"
		}
		if ann["helm.sh/hook-weight"] != wantWeight {
			t.Errorf("%s %s: hook-weight %q, want %s (RBAC before the Pod)", kind, o.GetName(), ann["helm.sh/hook-weight"], wantWeight)
		}
	}
	if got := hooks["Pod"].GetAnnotations()["helm.sh/hook-output-log-policy"]; got != "hook-failed" {
		t.Errorf("Pod hook-output-log-policy = %q, want hook-failed (helm test prints why it failed)", got)
	}
}

// checkTestPod: the Pod runs lockctl check install with wantFlags (flags
// lockctl defines), from the lockctl image, restricted, as the hook's own
// ServiceAccount, never restarted, and is not selected as a manager pod.
func checkTestPod(t *testing.T, m *manifest, pod *corev1.Pod, wantFlags []string) {
	t.Helper()
	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever || spec.ServiceAccountName != testSA || len(spec.Containers) != 1 {
		t.Fatalf("test Pod: restartPolicy %q, serviceAccountName %q, %d containers; want Never, %s, 1", spec.RestartPolicy, spec.ServiceAccountName, len(spec.Containers), testSA)
	}
	c := spec.Containers[0]
	if want := "ghcr.io/redlease/lockctl:" + chartAppVersion(t); c.Image != want {
		t.Errorf("test image = %q, want %q (the lockctl image)", c.Image, want)
	}
	if !slices.Equal(c.Command, []string{"/lockctl"}) || len(c.Args) < 2 || c.Args[0] != "check" || c.Args[1] != "install" {
		t.Fatalf("test command %v %v, want /lockctl check install ...", c.Command, c.Args)
	}
	if !slices.Equal(c.Args[2:], wantFlags) {
		t.Errorf("test flags = %v, want %v", c.Args[2:], wantFlags)
	}
	checkLockctlArgs(t, c.Args)
	checkRestrictedPod(t, spec)
	checkRestrictedContainer(t, c)
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("test container resources = %v, want memory requests and limits", c.Resources)
	}
	d := deployment(t, m)
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the test Pod's labels %v match the manager's selector %v", pod.Labels, d.Spec.Selector.MatchLabels)
	}
	for _, np := range m.ofKind("NetworkPolicy") {
		matchLabels, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		if labels.SelectorFromSet(matchLabels).Matches(labels.Set(pod.Labels)) {
			t.Errorf("NetworkPolicy %s selects the test Pod: it is the manager's", np.GetName())
		}
	}
}

// checkLockctlArgs parses args with lockctl's own command tree: the
// subcommand exists and takes every flag given.
func checkLockctlArgs(t *testing.T, args []string) {
	t.Helper()
	root := lockctl.NewCommand(io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err != nil || cmd.Name() != "install" || cmd.Parent().Name() != "check" {
		t.Fatalf("lockctl %v: finds %q (%v), want check install", args, cmd.Name(), err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("lockctl %v: %v", args, err)
	}
	if cmd.Flags().NArg() != 0 {
		t.Errorf("lockctl %v: arguments %v left over", args, cmd.Flags().Args())
	}
}

// checkHookRules: the hook's Role (or ClusterRole) grants exactly want,
// and its binding gives it to the hook's ServiceAccount only.
func checkHookRules(t *testing.T, hooks map[string]*unstructured.Unstructured, kind string, want []rbacv1.PolicyRule) {
	t.Helper()
	var rules []rbacv1.PolicyRule
	var ref rbacv1.RoleRef
	var subjects []rbacv1.Subject
	switch kind {
	case "Role":
		rules = into[rbacv1.Role](t, hooks["Role"]).Rules
		rb := into[rbacv1.RoleBinding](t, hooks["RoleBinding"])
		ref, subjects = rb.RoleRef, rb.Subjects
	case "ClusterRole":
		rules = into[rbacv1.ClusterRole](t, hooks["ClusterRole"]).Rules
		crb := into[rbacv1.ClusterRoleBinding](t, hooks["ClusterRoleBinding"])
		ref, subjects = crb.RoleRef, crb.Subjects
	}
	if !equalRules(rules, want) {
		t.Errorf("test %s rules = %+v, want exactly %+v", kind, rules, want)
	}
	if ref.Kind != kind || ref.Name != testSA {
		t.Errorf("test %s binding roleRef = %+v", kind, ref)
	}
	if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || subjects[0].Name != testSA || subjects[0].Namespace != namespace {
		t.Errorf("test %s binding subjects = %+v, want only ServiceAccount %s/%s", kind, subjects, namespace, testSA)
	}
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.Verbs, y.Verbs) && len(x.NonResourceURLs) == 0
	})
}

// TestInstallCheckHookToggles: tests.enabled=false renders no hook, and
// neither does rbac.create=false (the hook brings its own Role); the
// release objects stay as they were.
func TestInstallCheckHookToggles(t *testing.T) {
	t.Parallel()
	full := render(t)
	for _, args := range [][]string{{"--set", "tests.enabled=false"}, {"--set", "rbac.create=false"}} {
		m := render(t, args...)
		if h := testHooks(t, m); len(h) != 0 {
			t.Errorf("%v: test hooks rendered: %v", args, m.names())
		}
	}
	m := render(t, "--set", "tests.enabled=false")
	var releaseObjs []string
	for _, o := range full.objs {
		if o.GetAnnotations()["helm.sh/hook"] != "test" {
			releaseObjs = append(releaseObjs, o.GetKind()+" "+o.GetName())
		}
	}
	var got []string
	for _, o := range m.objs {
		got = append(got, o.GetKind()+" "+o.GetName())
	}
	if !slices.Equal(got, releaseObjs) {
		t.Errorf("tests.enabled=false renders %v, want everything but the test hooks %v", got, releaseObjs)
	}
}

// TestUninstallHook: helm uninstall's post-delete hook is a Job from the
// manager image running `manager --release-acl-finalizers` as a
// ServiceAccount of its own, whose ClusterRole may list and patch
// ClusterLockStores and nothing else; every object is deleted before it is
// created again and once the Job succeeded. rbac.create=false renders none
// of it (it brings RBAC). On a node: scenario 9 of make test-node.
func TestUninstallHook(t *testing.T) {
	t.Parallel()
	m := render(t, "--set", "image.tag=v9.9.9")
	kinds := map[string]bool{}
	for _, o := range m.objs {
		ann := o.GetAnnotations()
		if ann["helm.sh/hook"] != "post-delete" {
			continue
		}
		kinds[o.GetKind()] = true
		if o.GetName() != uninstallHook {
			t.Errorf("post-delete hook %s %s, want the name %s", o.GetKind(), o.GetName(), uninstallHook)
		}
		if ann["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%s: hook-delete-policy %q", o.GetKind(), ann["helm.sh/hook-delete-policy"])
		}
	}
	if want := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Job": true}; !maps.Equal(kinds, want) {
		t.Fatalf("post-delete hooks %v, want %v", kinds, want)
	}
	role := into[rbacv1.ClusterRole](t, m.must("ClusterRole", "", uninstallHook))
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"clusterlockstores"}) || !slices.Equal(role.Rules[0].Verbs, []string{"list", "patch"}) {
		t.Errorf("the hook's rules %+v, want list and patch on clusterlockstores only", role.Rules)
	}
	job := into[batchv1.Job](t, m.must("Job", namespace, uninstallHook))
	pod := job.Spec.Template.Spec
	if pod.ServiceAccountName != uninstallHook || len(pod.Containers) != 1 {
		t.Fatalf("the Job's pod: ServiceAccount %q, %d containers", pod.ServiceAccountName, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "ghcr.io/redlease/manager:v9.9.9" || !slices.Equal(c.Command, []string{"/manager"}) || !slices.Contains(c.Args, "--release-acl-finalizers") {
		t.Errorf("the Job runs %s %v %v, want the manager image with --release-acl-finalizers", c.Image, c.Command, c.Args)
	}
	for _, o := range render(t, "--set", "rbac.create=false").objs {
		if o.GetAnnotations()["helm.sh/hook"] == "post-delete" {
			t.Errorf("rbac.create=false renders the post-delete hook %s %s", o.GetKind(), o.GetName())
		}
	}
}

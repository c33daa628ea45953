package helm_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
)

const podRoleName = "redlease-lock-user"

// TestPodRole: podRole renders, in each namespace listed, a Role with
// exactly the rules lock-using pods need (podrbac.Rules, the rules
// the pkg/kube tests prove enough), granting the chart's ClusterLockStore's
// credentials Secret and the ones listed, and RoleBindings to the
// ServiceAccounts listed; none by default.
func TestPodRole(t *testing.T) {
	t.Parallel()
	for _, o := range render(t, "-f", chartDir(t)+"/"+storesValues).objs {
		if o.GetName() == podRoleName {
			t.Errorf("%s %s/%s rendered without podRole.create", o.GetKind(), o.GetNamespace(), o.GetName())
		}
	}
	m := render(t, "-f", chartDir(t)+"/"+storesValues,
		"--set", "podRole.create=true,podRole.namespaces={billing,reports},podRole.serviceAccounts={settle,report}",
		"--set", "podRole.secretNames={redlease-lock-nightly,redlease-shared}")
	want := podrbac.Rules("redlease-shared", "redlease-lock-nightly")
	for _, ns := range []string{"billing", "reports"} {
		r := into[rbacv1.Role](t, m.must("Role", ns, podRoleName))
		if !equalRules(r.Rules, want) {
			t.Errorf("Role %s/%s rules = %+v, want podrbac.Rules: %+v", ns, podRoleName, r.Rules, want)
		}
		rb := into[rbacv1.RoleBinding](t, m.must("RoleBinding", ns, podRoleName))
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != podRoleName {
			t.Errorf("RoleBinding %s/%s roleRef = %+v", ns, podRoleName, rb.RoleRef)
		}
		wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "settle", Namespace: ns}, {Kind: "ServiceAccount", Name: "report", Namespace: ns}}
		if len(rb.Subjects) != 2 || rb.Subjects[0] != wantSubjects[0] || rb.Subjects[1] != wantSubjects[1] {
			t.Errorf("RoleBinding %s/%s subjects = %+v, want %+v", ns, podRoleName, rb.Subjects, wantSubjects)
		}
	}
	if m.find("Role", namespace, podRoleName) != nil {
		t.Errorf("podRole rendered in the release namespace, which podRole.namespaces does not list")
	}

	// Secrets listed without the chart's store; no ServiceAccounts: the
	// Role alone.
	m = render(t, "--set", "podRole.create=true,podRole.namespaces={billing},podRole.secretNames={redlease-lockstore-team}")
	r := into[rbacv1.Role](t, m.must("Role", "billing", podRoleName))
	if want := podrbac.Rules("redlease-lockstore-team"); !equalRules(r.Rules, want) {
		t.Errorf("Role rules = %+v, want %+v", r.Rules, want)
	}
	if m.find("RoleBinding", "billing", podRoleName) != nil {
		t.Errorf("without podRole.serviceAccounts: a RoleBinding %s in billing", podRoleName)
	}
}

// TestPodRoleGrantsTheSecretsOfItsLocks: podRole.locks grants each lock's
// credentials Secret under the name the controller writes it
// (podrbac.LockSecretName), for inline locks and locks on either kind of
// store, long names hashed alike, or the name a lock chooses
// (credentialsSecretName); the chart's ClusterLockStore gets the same
// derivation. Before, the chart named ClusterLockStore "lock-x"'s Secret
// "redlease-lock-x" (the controller writes "redlease-clusterlockstore-lock-x"),
// refused long names, and lock names were not accepted at all.
func TestPodRoleGrantsTheSecretsOfItsLocks(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 250)
	type ref struct {
		Kind v1alpha1.StoreKind `json:"kind"`
		Name string             `json:"name"`
	}
	type lock struct {
		Name                  string `json:"name"`
		StoreRef              *ref   `json:"storeRef,omitempty"`
		CredentialsSecretName string `json:"credentialsSecretName,omitempty"`
	}
	locks := []lock{
		{Name: "nightly"},
		{Name: long},
		{Name: "settle", StoreRef: &ref{v1alpha1.StoreKindLockStore, "team"}},
		{Name: "report", StoreRef: &ref{v1alpha1.StoreKindLockStore, long}},
		{Name: "audit", StoreRef: &ref{v1alpha1.StoreKindClusterLockStore, "lockstore-team"}},
		{Name: "audit2", StoreRef: &ref{v1alpha1.StoreKindClusterLockStore, "clusterlockstore-lock-" + long[:200]}},
		{Name: "chosen", StoreRef: &ref{v1alpha1.StoreKindClusterLockStore, "shared"}, CredentialsSecretName: "billing-redis"},
		{Name: "chosen-inline", CredentialsSecretName: "settle-redis"},
	}
	const chartStore = "lock-x"
	values := map[string]any{
		"podRole":          map[string]any{"create": true, "namespaces": []string{"billing"}, "locks": locks},
		"clusterLockStore": map[string]any{"name": chartStore},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "locks.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m := render(t, "-f", chartDir(t)+"/"+storesValues, "-f", file)
	want := []string{podrbac.SecretName(v1alpha1.StoreKindClusterLockStore, chartStore)}
	for _, l := range locks {
		dl := v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Name: l.Name}, Spec: v1alpha1.DistributedLockSpec{CredentialsSecretName: l.CredentialsSecretName}}
		if l.StoreRef != nil {
			dl.Spec.StoreRef = &v1alpha1.StoreReference{Kind: l.StoreRef.Kind, Name: l.StoreRef.Name}
		}
		want = append(want, podrbac.LockSecretName(&dl))
	}
	r := into[rbacv1.Role](t, m.must("Role", "billing", podRoleName))
	if w := podrbac.Rules(want...); !equalRules(r.Rules, w) {
		t.Errorf("Role rules = %+v,\nwant podrbac.Rules of the controller's Secret names: %+v", r.Rules, w)
	}
}

// TestPodRoleRefusals: podRole never renders a Role that could get every
// Secret, or none, and says what is missing.
func TestPodRoleRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "podRole.create=true,podRole.secretNames={redlease-shared}"}, "podRole.create needs podRole.namespaces"},
		{[]string{"--set", "podRole.create=true,podRole.namespaces={billing}"}, "podRole.create needs a credentials Secret to grant"},
		{[]string{"--set", "podRole.create=true,podRole.namespaces={billing},podRole.secretNames={x},rbac.create=false"}, "podRole.create needs rbac.create"},
		{[]string{"--set", "podRole.create=true,podRole.namespaces={billing},podRole.locks[0].name=x,podRole.locks[0].storeRef.kind=Redis,podRole.locks[0].storeRef.name=y"}, "/podRole/locks/0/storeRef/kind"},
		{[]string{"--set", "podRole.namespaces={Billing}"}, "/podRole/namespaces/0"},
		{[]string{"--set", "podRole.secretNames={a_b}"}, "/podRole/secretNames/0"},
		{[]string{"--set", "podRole.serviceAccount=x"}, "additional properties 'serviceAccount' not allowed"},
	} {
		if _, err := helmTemplate(t, chartDir(t), tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: err = %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// TestPodRoleMatchesDocs: the Role docs/library.md gives lock-using pods and
// the CronJob sample's Role are podrbac.Rules, which the chart's
// podRole renders (TestPodRole) and the pkg/kube tests run with.
func TestPodRoleMatchesDocs(t *testing.T) {
	t.Parallel()
	data, err := readFile(filepath.Join(repoRoot(t), "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(rules:\n.*?)```").FindAllSubmatch(data, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/library.md has %d ```yaml blocks starting with rules:, want the one pod Role", len(blocks))
	}
	var doc struct{ Rules []rbacv1.PolicyRule }
	if err := yaml.UnmarshalStrict(blocks[0][1], &doc); err != nil {
		t.Fatalf("docs/library.md's pod Role: %v", err)
	}
	if want := podrbac.Rules("redlease-shared"); !equalRules(doc.Rules, want) {
		t.Errorf("docs/library.md's pod Role = %+v, want podrbac.Rules (what podRole renders): %+v", doc.Rules, want)
	}

	sample, err := readFile(filepath.Join(repoRoot(t), "config", "samples", "cronjob", "lockctl-cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseDocs(string(sample))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		if o.GetKind() == "Role" {
			found = true
			r := into[rbacv1.Role](t, o)
			if want := podrbac.Rules("redlease-lock-nightly-settlement"); !equalRules(r.Rules, want) {
				t.Errorf("the CronJob sample's Role = %+v, want podrbac.Rules: %+v", r.Rules, want)
			}
		}
	}
	if !found {
		t.Error("the CronJob sample has no Role")
	}
}

package lockctl_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/redistest"
)

// TestRBAC: `lockctl rbac LOCK --service-account SA` prints the Role
// podrbac.Rules gives for the Secret the lock's status names, bound to SA;
// applied, it is enough for SA to take the lock with lockctl.
func TestRBAC(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	publishLock(t, env, ns, "rbac", ns+"/rbac", srv.Addr(), "s3cret")
	admin := env.KubeconfigFile(t)

	if r := lockctl(t, "rbac", "rbac", "-n", ns, "--kubeconfig", admin); r.code != 2 {
		t.Errorf("without --service-account: exit %d, want 2", r.code)
	}
	r := lockctl(t, "rbac", "rbac", "-n", ns, "--service-account", "settle", "--kubeconfig", admin)
	if r.code != 0 {
		t.Fatalf("rbac: exit %d, stderr %q", r.code, r.stderr)
	}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	docs := yamlDocs(t, r.stdout)
	if len(docs) != 2 {
		t.Fatalf("rbac printed %d documents, want a Role and a RoleBinding:\n%s", len(docs), r.stdout)
	}
	if err := errors.Join(yaml.UnmarshalStrict(docs[0], &role), yaml.UnmarshalStrict(docs[1], &binding)); err != nil {
		t.Fatal(err)
	}
	if want := podrbac.Rules("redlease-shared"); role.Kind != "Role" || role.Namespace != ns || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s %s/%s rules %+v; want podrbac.Rules(redlease-shared) = %+v", role.Kind, role.Namespace, role.Name, role.Rules, want)
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "settle" || binding.Subjects[0].Namespace != ns {
		t.Errorf("RoleBinding %+v: want Role %s bound to %s/settle", binding, role.Name, ns)
	}
	sa := "system:serviceaccount:" + ns + ":settle"
	asSA := env.KubeconfigAs(t, sa)
	if r := lockctl(t, "status", "rbac", "-n", ns, "--kubeconfig", asSA); r.code == 0 {
		t.Fatal("the ServiceAccount read the lock before the Role was applied: the test does not act as it")
	}
	if err := errors.Join(env.Client.Create(t.Context(), &role), env.Client.Create(t.Context(), &binding)); err != nil {
		t.Fatal(err)
	}
	env.WaitForAccess(t, sa, ns, "list", "redlease.io", "distributedlocks")
	if r := lockctl(t, "run", "--lock", "rbac", "-n", ns, "--kubeconfig", asSA, "--", "true"); r.code != 0 {
		t.Errorf("run as the bound ServiceAccount: exit %d, stderr %q", r.code, r.stderr)
	}
}

func yamlDocs(t *testing.T, s string) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc)
	}
}

// TestRBACFromAManifestMatchesTheReconciledLock: `lockctl rbac -f FILE`
// (and `-f -`, stdin) renders the Role from DistributedLock manifests that
// have no status, with no API server (its kubeconfig does not exist):
// spec.credentialsSecretName, else the derived name; other kinds in the
// file are skipped. The output is byte for byte what `lockctl rbac` prints
// for the same locks in the API server, before their status is written and
// once it names the Secrets (as the controller does:
// TestChosenCredentialsSecretName). Applied, the Role lets the
// ServiceAccount take the lock through the chosen Secret (lockctl run
// --lock, pkg/kube).
func TestRBACFromAManifestMatchesTheReconciledLock(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("chosen-pw"))
	const manifest = `apiVersion: v1
kind: ServiceAccount
metadata: {name: settle}
---
apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: pay}
spec:
  storeRef: {kind: ClusterLockStore, name: shared}
  credentialsSecretName: billing-redis
---
apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: report}
spec:
  storeRef: {kind: ClusterLockStore, name: shared}
`
	file := filepath.Join(t.TempDir(), "locks.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	offline := []string{"--kubeconfig", filepath.Join(t.TempDir(), "absent"), "-n", ns, "--service-account", "settle"}
	fromFile := lockctl(t, append([]string{"rbac", "-f", file}, offline...)...)
	if fromFile.code != 0 {
		t.Fatalf("rbac -f: exit %d, stderr %q", fromFile.code, fromFile.stderr)
	}
	role, binding := roleAndBinding(t, fromFile.stdout)
	if want := podrbac.Rules("billing-redis", "redlease-shared"); role.Namespace != ns || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s/%s rules %+v; want %+v", role.Namespace, role.Name, role.Rules, want)
	}
	if stdin := lockctlStdin(t, manifest, append([]string{"rbac", "-f", "-"}, offline...)...); stdin != fromFile.stdout {
		t.Errorf("rbac -f - printed\n%s\nrbac -f FILE\n%s", stdin, fromFile.stdout)
	}
	for _, tc := range []struct {
		what string
		args []string
	}{
		{"no namespace anywhere", []string{"rbac", "-f", file, "--service-account", "settle", "--kubeconfig", offline[1]}},
		{"a lock the file does not hold", []string{"rbac", "-f", file, "nightly", "-n", ns, "--service-account", "settle"}},
		{"a file without locks", []string{"rbac", "-f", os.DevNull, "-n", ns, "--service-account", "settle"}},
		{"a malformed lock name", []string{"rbac", "-f", file, ns + "/pay/x", "--service-account", "settle"}},
	} {
		if r := lockctl(t, tc.args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.what, r.code, r.stderr)
		}
	}

	// The same locks in the API server: before the controller ran, then
	// reconciled.
	admin := env.KubeconfigFile(t)
	online := []string{"rbac", "pay", "report", "-n", ns, "--service-account", "settle", "--kubeconfig", admin}
	var locks []*v1alpha1.DistributedLock
	for _, l := range []struct{ name, secret string }{{"pay", "billing-redis"}, {"report", ""}} {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: l.name},
			Spec: v1alpha1.DistributedLockSpec{StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"}, CredentialsSecretName: l.secret}}
		if err := env.Client.Create(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
		locks = append(locks, dl)
	}
	if r := lockctl(t, online...); r.code != 0 || r.stdout != fromFile.stdout {
		t.Errorf("rbac of the locks without status: exit %d, printed\n%s\nwant what -f printed\n%s", r.code, r.stdout, fromFile.stdout)
	}
	for i, secret := range []string{"billing-redis", "redlease-shared"} {
		publishStatus(t, env, locks[i], ns+"/"+locks[i].Name, srv.Addr(), secret, "chosen-pw")
	}
	if r := lockctl(t, online...); r.code != 0 || r.stdout != fromFile.stdout {
		t.Errorf("rbac of the reconciled locks: exit %d, printed\n%s\nwant what -f printed\n%s", r.code, r.stdout, fromFile.stdout)
	}

	sa := "system:serviceaccount:" + ns + ":settle"
	asSA := env.KubeconfigAs(t, sa)
	if err := errors.Join(env.Client.Create(t.Context(), &role), env.Client.Create(t.Context(), &binding)); err != nil {
		t.Fatal(err)
	}
	env.WaitForAccess(t, sa, ns, "list", "redlease.io", "distributedlocks")
	if r := lockctl(t, "run", "--lock", "pay", "-n", ns, "--kubeconfig", asSA, "--", "true"); r.code != 0 {
		t.Errorf("run as the ServiceAccount, through billing-redis: exit %d, stderr %q", r.code, r.stderr)
	}
}

// roleAndBinding parses rbac's output.
func roleAndBinding(t *testing.T, out string) (rbacv1.Role, rbacv1.RoleBinding) {
	t.Helper()
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	docs := yamlDocs(t, out)
	if len(docs) != 2 {
		t.Fatalf("rbac printed %d documents, want a Role and a RoleBinding:\n%s", len(docs), out)
	}
	if err := errors.Join(yaml.UnmarshalStrict(docs[0], &role), yaml.UnmarshalStrict(docs[1], &binding)); err != nil {
		t.Fatal(err)
	}
	return role, binding
}

// lockctlStdin runs lockctl with stdin and returns its stdout; it fails t
// unless lockctl exits 0.
func lockctlStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := program(ctx, binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lockctl %v: %v, stderr %q", args, err, errb.String())
	}
	return string(out)
}

// publishStatus writes what the controller would for dl: its credentials
// Secret under secret with password, and a Ready status naming it.
func publishStatus(t *testing.T, env *kubetest.Env, dl *v1alpha1.DistributedLock, key, addr, secret, password string) {
	t.Helper()
	err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: dl.Namespace, Name: secret},
		Data: map[string][]byte{v1alpha1.CredentialsPassword: []byte(password)}})
	if err != nil {
		t.Fatal(err)
	}
	dl.Status = v1alpha1.DistributedLockStatus{Key: key,
		Connection:           &v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}},
		CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: secret}}
	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable})
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
}

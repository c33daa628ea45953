package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// gitopsLocks is a tenant's repository: its lock, naming the credentials
// Secret its pods read, and nothing the controller derives.
const gitopsLocks = `apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: nightly, namespace: billing}
spec:
  storeRef: {kind: ClusterLockStore, name: shared}
  credentialsSecretName: billing-redis
`

// TestGitOpsCredentialsSecretName (issue 41): a tenant's manifests name
// the credentials Secret (spec.credentialsSecretName) and the pods' Role is
// rendered from them by `lockctl rbac -f`, before any controller ran. The
// manager binary, on a ClusterLockStore with isolation ACL over a real
// redis-server, writes that Secret and names it in status; `lockctl rbac`
// of the reconciled lock prints the same Role; and a pkg/kube Locker
// acting as the ServiceAccount bound to that Role only takes the lock,
// through the chosen Secret, with a fence.
func TestGitOpsCredentialsSecretName(t *testing.T) {
	env := kubetest.Start(t)
	admin := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	const ns, sa = "billing", "settle"
	createNamespace(t, env.Client, "redlease-system", nil)
	createNamespace(t, env.Client, ns, map[string]string{tenantLabel: "true"})

	// Rendered from the repository, with no cluster at all.
	file := filepath.Join(t.TempDir(), "locks.yaml")
	if err := os.WriteFile(file, []byte(gitopsLocks), 0o600); err != nil {
		t.Fatal(err)
	}
	offline := filepath.Join(t.TempDir(), "no-kubeconfig")
	rendered := lockctlOut(t, "rbac", "-f", file, "--service-account", sa, "--kubeconfig", offline)

	startManager(t, admin, "redlease-system")
	cs := &v1alpha1.ClusterLockStore{ObjectMeta: metav1.ObjectMeta{Name: storeName}, Spec: v1alpha1.ClusterLockStoreSpec{
		Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}},
		Tenants: &v1alpha1.TenantsSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tenantLabel: "true"}},
			Isolation: v1alpha1.IsolationACL},
	}}
	if err := env.Client.Create(t.Context(), cs); err != nil {
		t.Fatal(err)
	}
	waitStoreReady(t, env.Client, storeName)
	// The repository synced: the lock, the ServiceAccount, the Role.
	var dl v1alpha1.DistributedLock
	if err := yaml.UnmarshalStrict([]byte(gitopsLocks), &dl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &dl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}); err != nil {
		t.Fatal(err)
	}
	applyDocs(t, env.Client, rendered)

	waitLockReady(t, env.Client, ns, "nightly")
	got := getLock(t, env.Client, ns, "nightly")
	if ref := got.Status.CredentialsSecretRef; ref == nil || ref.Name != "billing-redis" {
		t.Fatalf("status.credentialsSecretRef %+v, want billing-redis", ref)
	}
	if online := lockctlOut(t, "rbac", "nightly", "-n", ns, "--service-account", sa, "--kubeconfig", admin); online != rendered {
		t.Errorf("lockctl rbac of the reconciled lock:\n%s\nfrom the manifest:\n%s", online, rendered)
	}

	// A pod of the ServiceAccount, with only the rendered Role.
	env.WaitForAccess(t, "system:serviceaccount:"+ns+":"+sa, ns, "list", "redlease.io", "distributedlocks")
	cfg, err := clientcmd.BuildConfigFromFlags("", env.KubeconfigAsServiceAccount(t, ns, sa))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := kube.NewLocker(ctx, cfg, ns, "nightly", lock.WithIdentity("settle-pod"))
	if err != nil {
		t.Fatalf("kube.NewLocker as %s: %v", sa, err)
	}
	defer func() { _ = l.Close() }()
	lease, err := l.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("acquiring through billing-redis: %v", err)
	}
	if lease.Key() != ns+"/nightly" || lease.Fence() == 0 {
		t.Errorf("lease on %q with fence %d, want %s/nightly with a fence", lease.Key(), lease.Fence(), ns)
	}
	if err := lease.Release(ctx); err != nil {
		t.Error(err)
	}
}

// lockctlOut runs the lockctl TestMain built and returns its stdout; it
// fails t unless lockctl exits 0.
func lockctlOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := program(t.Context(), filepath.Join(binDir, "lockctl"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lockctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// applyDocs creates the Role and RoleBinding lockctl rbac printed.
func applyDocs(t *testing.T, c client.Client, out string) {
	t.Helper()
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	if err := d.Decode(&role); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(&binding); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &binding); err != nil {
		t.Fatal(err)
	}
}

// waitLockReady waits until the lock's Ready condition is True.
func waitLockReady(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		dl := getLock(t, c, ns, name)
		if apimeta.IsStatusConditionTrue(dl.Status.Conditions, v1alpha1.ConditionReady) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s not Ready: %+v", ns, name, dl.Status.Conditions)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

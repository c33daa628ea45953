package e2e

import (
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

const (
	storeName    = "shared"
	tenantLabel  = "redlease.io/locks"
	adminNS      = "redis"
	adminSecret  = "redis-admin"
	tenantSecret = "redlease-" + storeName // the credentials Secret the controller writes in each tenant namespace
)

// TestHelmInstallWithStore installs the chart the multi-tenant way: a
// ClusterLockStore from values (isolation ACL, namespaces labelled
// redlease.io/locks=true), inline locks off. It then shows, as a platform
// team would check it: the store becomes Ready; two tenant namespaces take
// their locks through lockctl run as a ServiceAccount holding only the
// documented pod Role, which the chart renders there (podRole); a third, unlabelled namespace gets
// NamespaceNotAllowed and an inline lock gets InlineLocksDisabled; with
// tenant A's Secret, B's lock key, fence counter and channel answer NOPERM;
// `helm upgrade` adopts the store the first install created, and
// `helm uninstall` keeps it. The release's `helm test` hook (its command,
// as its ServiceAccount) passes, then fails naming the store once its
// Redis is gone, and naming the manager once that is SIGKILLed.
func TestHelmInstallWithStore(t *testing.T) {
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	admin := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword(password))
	createNamespace(t, env.Client, adminNS, nil)
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: adminNS, Name: adminSecret},
		StringData: map[string]string{"password": password}}); err != nil {
		t.Fatal(err)
	}

	const ns = "redlease-system"
	tenants := []string{"tenant-a", "tenant-b"}
	for _, tn := range tenants { // before the install: podRole renders into them
		createNamespace(t, env.Client, tn, map[string]string{tenantLabel: "true"})
		if err := env.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tn, Name: lockUser}}); err != nil {
			t.Fatal(err)
		}
	}
	values := storeValues(t, srv.Addr(), tenants)
	run(t, "helm", "install", "redlease", filepath.Join(root, "charts", "redlease"), "-n", ns, "--create-namespace", "--kubeconfig", admin, "-f", values)
	var cs v1alpha1.ClusterLockStore
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: storeName}, &cs); err != nil {
		t.Fatalf("helm install did not create ClusterLockStore %s: %v", storeName, err)
	}
	sa := serviceAccountOf(t, env.Client, ns)
	mgr := startManager(t, env.KubeconfigAsServiceAccount(t, ns, sa), ns, "--allow-inline-locks=false")
	waitStoreReady(t, env.Client, storeName)
	check := testHook(t, env, "redlease", ns)
	check.want(t, 0, nil,
		"ok    crds     redlease.io/v1alpha1 serves ClusterLockStore, DistributedLock, LockRelease, LockStore",
		"ok    manager  Lease "+ns+"/redlease-manager.redlease.io renewed by",
		"ok    store    ClusterLockStore "+storeName+" is Ready",
		"install check passed")

	createNamespace(t, env.Client, "outsider", nil)
	for _, tn := range append(tenants, "outsider") {
		onStore := v1alpha1.DistributedLockSpec{Key: "settlement", TTL: &metav1.Duration{Duration: 10 * time.Second},
			StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: storeName}}
		if err := env.Client.Create(t.Context(), &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: tn, Name: "settlement"}, Spec: onStore}); err != nil {
			t.Fatal(err)
		}
	}
	inline := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: tenants[0], Name: "inline"},
		Spec: v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}
	if err := env.Client.Create(t.Context(), inline); err != nil {
		t.Fatal(err)
	}

	for _, tn := range tenants {
		waitReady(t, env.Client, tn, []string{"settlement"})
		dl := getLock(t, env.Client, tn, "settlement")
		if dl.Status.Key != tn+"/settlement" || dl.Status.CredentialsSecretRef == nil || dl.Status.CredentialsSecretRef.Name != tenantSecret {
			t.Fatalf("%s/settlement: status.key %q, credentialsSecretRef %+v; want %s/settlement and %s", tn, dl.Status.Key, dl.Status.CredentialsSecretRef, tn, tenantSecret)
		}
		lockctlRuns(t, podKubeconfig(t, env, tn), tn, "settlement")
	}
	waitReason(t, env.Client, "outsider", "settlement", v1alpha1.ReasonNamespaceNotAllowed)
	waitReason(t, env.Client, tenants[0], "inline", v1alpha1.ReasonInlineLocksDisabled)

	tenantCannotReachTheOther(t, env.Client, tenants[0], tenants[1])
	checkInstallFailures(t, env, check, srv, mgr, ns)

	uid := cs.UID
	run(t, "helm", "upgrade", "redlease", filepath.Join(root, "charts", "redlease"), "-n", ns, "--kubeconfig", admin, "-f", values)
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: storeName}, &cs); err != nil || cs.UID != uid {
		t.Fatalf("after helm upgrade: store %v (uid %s, was %s): the upgrade must adopt the store, not replace it", err, cs.UID, uid)
	}
	// Adopted: the store is now an object of the release, not a hook (the
	// live object keeps the hook's annotations, which Helm reads only from
	// the rendered manifest).
	if manifest := run(t, "helm", "get", "manifest", "redlease", "-n", ns, "--kubeconfig", admin); !strings.Contains(manifest, "kind: ClusterLockStore") {
		t.Errorf("after helm upgrade the release's manifest has no ClusterLockStore: it was not adopted\n%s", manifest)
	}
	if hooks := run(t, "helm", "get", "hooks", "redlease", "-n", ns, "--kubeconfig", admin); strings.Contains(hooks, "kind: ClusterLockStore") {
		t.Errorf("after helm upgrade the store is still a hook of the release:\n%s", hooks)
	}
	// --no-hooks: no kubelet runs the post-delete hook's Job on envtest
	// (helm would wait for it); make test-node's scenario 9 runs it.
	run(t, "helm", "uninstall", "redlease", "-n", ns, "--kubeconfig", admin, "--no-hooks")
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: storeName}, &cs); err != nil || cs.DeletionTimestamp != nil {
		t.Fatalf("after helm uninstall: store %v (deleting: %v); it must be kept with its tenants' Redis users", err, cs.DeletionTimestamp)
	}
}

// storeValues writes the chart values of a multi-tenant install whose store
// is srv: the controller authenticates as the server's default user (the
// only user with ACL rights there), tenants get their own users, and the
// ServiceAccount lock-user of each tenant namespace the pod Role.
func storeValues(t *testing.T, addr string, tenants []string) string {
	t.Helper()
	values := map[string]any{
		"controller": map[string]any{"allowInlineLocks": false},
		"podRole":    map[string]any{"create": true, "namespaces": tenants, "serviceAccounts": []string{lockUser}},
		"clusterLockStore": map[string]any{
			"enabled": true,
			"name":    storeName,
			"spec": v1alpha1.ClusterLockStoreSpec{
				Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}},
				ControllerAuth: &v1alpha1.RedisAuth{PasswordSecretRef: &v1alpha1.SecretKeyRef{
					Namespace: adminNS, Name: adminSecret, Key: "password"}},
				Tenants: &v1alpha1.TenantsSpec{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tenantLabel: "true"}},
					Isolation:         v1alpha1.IsolationACL,
				},
			},
		},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lockUser is the ServiceAccount of a tenant's pods, bound to podRole.
const lockUser = "lock-user"

// podKubeconfig is a kubeconfig acting as the ServiceAccount lock-user of
// ns, which holds only the Role the chart's podRole rendered there: the
// rules docs/library.md documents for lock-using pods (checked here against
// podrbac.Rules, which the pkg/kube tests run with; the chart's
// rendering of them is checked in test/helm).
func podKubeconfig(t *testing.T, env *kubetest.Env, ns string) string {
	t.Helper()
	var role rbacv1.Role
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "redlease-lock-user"}, &role); err != nil {
		t.Fatalf("podRole did not render its Role in %s: %v", ns, err)
	}
	if want := podrbac.Rules(tenantSecret); !reflect.DeepEqual(role.Rules, want) {
		t.Fatalf("Role %s/%s rules = %+v, want podrbac.Rules(%s) = %+v", ns, role.Name, role.Rules, tenantSecret, want)
	}
	var rb rbacv1.RoleBinding
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "redlease-lock-user"}, &rb); err != nil ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Name != lockUser || rb.RoleRef.Name != role.Name {
		t.Fatalf("podRole's RoleBinding in %s: %v %+v", ns, err, rb)
	}
	return env.KubeconfigAsServiceAccount(t, ns, lockUser)
}

// tenantCannotReachTheOther connects as a pod of namespace a does, with only
// what a's lock status and credentials Secret publish, and checks that a's own lock
// works while b's lock key, fence counter and events channel, and the
// server-wide commands, answer NOPERM.
func tenantCannotReachTheOther(t *testing.T, c client.Client, a, b string) {
	t.Helper()
	dl := getLock(t, c, a, "settlement")
	var secret corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: a, Name: dl.Status.CredentialsSecretRef.Name}, &secret); err != nil {
		t.Fatal(err)
	}
	servers, sentinels, err := redisconn.FromSecret(secret.Data, false, "", false)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := redisconn.NewUniversal(*dl.Status.Connection, servers, sentinels)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redisconn.CloseAll(clients) })
	rc := clients[0]
	locker, err := lock.New(rc, lock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locker.Close() })
	ctx := t.Context()
	own, err := locker.TryAcquire(ctx, a+"/settlement")
	if err != nil {
		t.Fatalf("namespace %s taking its own lock with its Secret: %v", a, err)
	}
	if err := own.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other := b + "/settlement"
	for what, err := range map[string]error{
		"taking " + other: func() error {
			l, err := locker.TryAcquire(ctx, other)
			if err == nil {
				_ = l.Release(ctx)
			}
			return err
		}(),
		"INCR " + protocol.FenceKey(other):         rc.Incr(ctx, protocol.FenceKey(other)).Err(),
		"PUBLISH " + protocol.EventsChannel(other): rc.Publish(ctx, protocol.EventsChannel(other), "x").Err(),
		"CONFIG SET": rc.ConfigSet(ctx, "min-replicas-to-write", "100").Err(),
		"FLUSHALL":   rc.FlushAll(ctx).Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("namespace %s %s: %v, want NOPERM", a, what, err)
		}
	}
}

func createNamespace(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
}

func getLock(t *testing.T, c client.Client, ns, name string) *v1alpha1.DistributedLock {
	t.Helper()
	var dl v1alpha1.DistributedLock
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dl); err != nil {
		t.Fatal(err)
	}
	return &dl
}

func waitStoreReady(t *testing.T, c client.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var cs v1alpha1.ClusterLockStore
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, &cs)
		if err == nil && apimeta.IsStatusConditionTrue(cs.Status.Conditions, v1alpha1.ConditionReady) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterLockStore %s not Ready: %v %+v", name, err, cs.Status.Conditions)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitReason waits until the lock's Ready condition is False for reason.
func waitReason(t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		dl := getLock(t, c, ns, name)
		cond := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
		if cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == reason {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: Ready %+v, want False with reason %s", ns, name, cond, reason)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestHelmInstallNamespaced installs the chart with watchNamespaces: the
// manager, as the chart's ServiceAccount, holds Roles in the watched
// namespace only, plus the ClusterRole of the cluster-scoped resources it
// watches (Namespaces, ClusterLockStores), without which its caches never
// sync. An inline lock and a lock on a LockStore in the watched namespace
// become Ready.
func TestHelmInstallNamespaced(t *testing.T) {
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	admin := env.KubeconfigFile(t)
	const ns = "redlease-system"
	work := env.Namespace(t)
	run(t, "helm", "install", "redlease", filepath.Join(root, "charts", "redlease"), "-n", ns, "--create-namespace", "--kubeconfig", admin,
		"--set", "watchNamespaces={"+work+"}")
	sa := serviceAccountOf(t, env.Client, ns)
	startManager(t, env.KubeconfigAsServiceAccount(t, ns, sa), ns, "--watch-namespaces="+work)

	srv := redistest.StartStandalone(t)
	redis := v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}
	objs := []client.Object{
		&v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: work, Name: "team"}, Spec: v1alpha1.LockStoreSpec{Redis: redis}},
		&v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: work, Name: "on-store"},
			Spec: v1alpha1.DistributedLockSpec{StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindLockStore, Name: "team"}}},
		&v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: work, Name: "inline"}, Spec: v1alpha1.DistributedLockSpec{Redis: redis}},
	}
	for _, o := range objs {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, env.Client, work, []string{"on-store", "inline"})
}

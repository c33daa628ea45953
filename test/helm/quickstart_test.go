package helm_test

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/redlease/redlease/api/v1alpha1"
)

const quickstartName = "redlease-quickstart-redis"

// TestQuickstartRendersTheSameEverywhere: quickstart.enabled renders the
// same objects on every render (no random password, no lookup) and with or
// without the API server knowing the redlease kinds (helm template, Argo
// CD), for the install hook, an upgrade and installHook=false.
func TestQuickstartRendersTheSameEverywhere(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--set", "quickstart.enabled=true"},
		{"--set", "quickstart.enabled=true", "--is-upgrade"},
		{"--set", "quickstart.enabled=true,clusterLockStore.installHook=false"},
	} {
		first, err := helmTemplate(t, chartDir(t), args...)
		if err != nil {
			t.Fatal(err)
		}
		again, err := helmTemplate(t, chartDir(t), args...)
		if err != nil {
			t.Fatal(err)
		}
		if first != again {
			t.Errorf("%v: two renders differ", args)
		}
		with, err := helmTemplate(t, chartDir(t), append(args, "--api-versions", "redlease.io/v1alpha1/ClusterLockStore",
			"--api-versions", "redlease.io/v1alpha1/LockStore", "--api-versions", "redlease.io/v1alpha1/DistributedLock")...)
		if err != nil {
			t.Fatal(err)
		}
		a, b := objectSet(t, first), objectSet(t, with)
		if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) || !reflect.DeepEqual(a, b) {
			t.Errorf("%v: the objects differ with the API server knowing the kinds:\nwithout: %v\nwith:    %v", args, slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
		}
		for _, k := range []string{"ClusterLockStore//quickstart", "StatefulSet/" + namespace + "/" + quickstartName, "Secret/" + namespace + "/" + quickstartName} {
			if _, ok := a[k]; !ok {
				t.Errorf("%v: no %s rendered", args, k)
			}
		}
	}
}

// TestQuickstartRendersNoPassword: no password is rendered, ever: the
// Secret has no data (lockctl aclfile fills it in the cluster), nothing
// in the output looks like a generated password, and the values have no
// password to set (the schema refuses one).
func TestQuickstartRendersNoPassword(t *testing.T) {
	t.Parallel()
	out, err := helmTemplate(t, chartDir(t), "--set", "quickstart.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseDocs(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Secret" {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			if _, ok := o.Object[field]; ok {
				t.Errorf("Secret %s renders %s: the quick start's password must come from the cluster", o.GetName(), field)
			}
		}
	}
	if m := regexp.MustCompile(`[0-9a-f]{64}`).FindString(out); m != "" {
		t.Errorf("the rendering holds %s, which looks like a password or its hash", m)
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "quickstart.enabled=true,quickstart.password=x"); err == nil {
		t.Error("quickstart.password was accepted: the schema must refuse a password in values")
	}
}

// TestQuickstartRedis: the quick start is off by default; on, its Redis
// pod is restricted and starts redis-server (the image's entrypoint) on the
// aclfile that an init container from the lockctl image builds from the
// Secret; the pod's ServiceAccount may get and update that one Secret,
// nothing else.
func TestQuickstartRedis(t *testing.T) {
	t.Parallel()
	if off := render(t); off.find("StatefulSet", namespace, quickstartName) != nil || off.find("ClusterLockStore", "", "quickstart") != nil {
		t.Fatal("the quick start renders by default: it must be off")
	}
	m := render(t, "--set", "quickstart.enabled=true")
	sts := into[appsv1.StatefulSet](t, m.must("StatefulSet", namespace, quickstartName))
	if *sts.Spec.Replicas != 1 {
		t.Errorf("%d Redis replicas, want 1", *sts.Spec.Replicas)
	}
	pod := sts.Spec.Template.Spec
	checkQuickstartPod(t, pod)
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("init containers %d, containers %d: want one each", len(pod.InitContainers), len(pod.Containers))
	}
	init, redis := pod.InitContainers[0], pod.Containers[0]
	for _, c := range []corev1.Container{init, redis} {
		checkRestrictedContainer(t, c)
	}
	if init.Image != "ghcr.io/redlease/lockctl:v0.1.0" || !slices.Equal(init.Args, []string{"aclfile", "--secret", quickstartName, "--out", "/acl/users.acl"}) {
		t.Errorf("init container %s %v, want lockctl aclfile on the Secret", init.Image, init.Args)
	}
	if redis.Image != "docker.io/library/redis:7.4.6" || len(redis.Command) != 0 || !strings.Contains(strings.Join(redis.Args, " "), "--aclfile /acl/users.acl") {
		t.Errorf("Redis container %s %v %v, want the image's entrypoint with --aclfile", redis.Image, redis.Command, redis.Args)
	}
	if pod.ServiceAccountName != quickstartName {
		t.Errorf("the Redis pod runs as %q, want %s", pod.ServiceAccountName, quickstartName)
	}
	role := into[rbacv1.Role](t, m.must("Role", namespace, quickstartName))
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{quickstartName}, Verbs: []string{"get", "update"}}}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("the Redis pod's Role: %+v, want get and update of its one Secret", role.Rules)
	}
	into[corev1.Service](t, m.must("Service", namespace, quickstartName))
}

// TestQuickstartStore: the quick start's ClusterLockStore finds the server
// through its Service, reads the controller's password from the Secret
// lockctl aclfile fills, isolates tenants with ACL users (namespaces
// labelled redlease.io/locks=true) and, unlike clusterLockStore's, is not
// kept on uninstall; global.imageRegistry moves the Redis image too; the
// chart refuses two stores of one name.
func TestQuickstartStore(t *testing.T) {
	t.Parallel()
	m := render(t, "--set", "quickstart.enabled=true")
	store := into[v1alpha1.ClusterLockStore](t, m.must("ClusterLockStore", "", "quickstart"))
	s := store.Spec
	if s.Redis.Mode != v1alpha1.RedisModeStandalone || s.Redis.Service == nil || s.Redis.Service.Name != quickstartName || s.Redis.Service.Namespace != namespace {
		t.Errorf("the store's Redis: %+v, want the quick start's Service", s.Redis)
	}
	if a := s.ControllerAuth; a == nil || a.Username != "redlease-operator" || a.PasswordSecretRef == nil || a.PasswordSecretRef.Name != quickstartName || a.PasswordSecretRef.Key != "password" {
		t.Errorf("the store's controllerAuth: %+v, want the Secret lockctl aclfile fills", a)
	}
	if s.Tenants == nil || s.Tenants.Isolation != v1alpha1.IsolationACL || s.Tenants.NamespaceSelector.MatchLabels["redlease.io/locks"] != "true" {
		t.Errorf("the store's tenants: %+v, want ACL isolation of labelled namespaces", s.Tenants)
	}
	if _, kept := store.Annotations["helm.sh/resource-policy"]; kept {
		t.Error("the quick start's store is kept on uninstall: its Redis is not")
	}

	mirror := render(t, "--set", "quickstart.enabled=true,global.imageRegistry=mirror.example:5000")
	sts := into[appsv1.StatefulSet](t, mirror.must("StatefulSet", namespace, quickstartName))
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "mirror.example:5000/library/redis:7.4.6" {
		t.Errorf("global.imageRegistry: the Redis image is %s", img)
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "quickstart.enabled=true,clusterLockStore.enabled=true,clusterLockStore.name=quickstart,clusterLockStore.spec.redis.mode=Standalone"); err == nil {
		t.Error("two ClusterLockStores named quickstart were rendered")
	}
}

// checkQuickstartPod is checkRestrictedPod with the official Redis
// image's user (999) instead of the chart's 65532.
func checkQuickstartPod(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 999 {
		t.Errorf("the Redis pod's securityContext %+v: want runAsNonRoot and runAsUser 999", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the Redis pod's securityContext: want seccompProfile RuntimeDefault")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the Redis pod uses host namespaces")
	}
}

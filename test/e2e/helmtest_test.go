package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// installCheck is the installed release's `helm test` hook, run the only way
// envtest allows (no kubelet: pods never run): its RBAC hooks are created as
// Helm would create them, and its Pod's command and args run as a local
// process with the hook ServiceAccount's permissions (impersonation).
type installCheck struct {
	kubeconfig string   // acting as the Pod's ServiceAccount
	args       []string // the Pod's container args
}

// testHook reads the test hooks of release from `helm get hooks`, creates
// every one but the Pod, and returns the Pod's command, to run as its
// ServiceAccount. The created objects are deleted when t ends.
func testHook(t *testing.T, env *kubetest.Env, release, ns string) *installCheck {
	t.Helper()
	out := run(t, "helm", "get", "hooks", release, "-n", ns, "--kubeconfig", env.KubeconfigFile(t))
	r := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var pod *corev1.Pod
	for {
		u := &unstructured.Unstructured{}
		err := r.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsing helm get hooks: %v\n%s", err, out)
		}
		if len(u.Object) == 0 || u.GetAnnotations()["helm.sh/hook"] != "test" {
			continue
		}
		if u.GetKind() == "Pod" {
			pod = &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := env.Client.Create(t.Context(), u); err != nil {
			t.Fatalf("creating test hook %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) }) // the API server goes with the test
	}
	if pod == nil || len(pod.Spec.Containers) != 1 {
		t.Fatalf("helm get hooks %s: no test Pod with one container:\n%s", release, out)
	}
	c := pod.Spec.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/lockctl" {
		t.Fatalf("the test Pod runs %v, want /lockctl (the lockctl image's binary)", c.Command)
	}
	return &installCheck{kubeconfig: env.KubeconfigAsServiceAccount(t, pod.Namespace, pod.Spec.ServiceAccountName), args: c.Args}
}

// run runs the test Pod's command (lockctl built from ./cmd/lockctl, with
// the Pod's args, then extra) and returns its exit code and output.
func (c *installCheck) run(t *testing.T, extra ...string) (int, string) {
	t.Helper()
	cmd := program(t.Context(), filepath.Join(binDir, "lockctl"), append(append([]string{}, c.args...), extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig) // in the pod: the in-cluster config
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// wantInstallCheck runs the hook's command and checks its exit code and
// that its output says each of want.
func (c *installCheck) want(t *testing.T, code int, extra []string, want ...string) {
	t.Helper()
	got, out := c.run(t, extra...)
	if got != code {
		t.Fatalf("helm test's command (lockctl %s): exit %d, want %d\n%s", strings.Join(append(c.args, extra...), " "), got, code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("helm test's command does not say %q:\n%s", w, out)
		}
	}
	t.Logf("lockctl %s:\n%s", strings.Join(append(c.args, extra...), " "), out)
}

// checkInstallFailures: with the store's Redis gone the hook fails naming
// the store's reason (the manager still passes); with the manager
// SIGKILLed it fails on the manager, although the Lease still names a
// holder and a renewTime within its duration (what a naive check reads).
func checkInstallFailures(t *testing.T, env *kubetest.Env, check *installCheck, srv *redistest.Server, mgr *managerProcess, ns string) {
	t.Helper()
	srv.Kill()
	reason := waitStoreNotReady(t, env.Client, storeName)
	check.want(t, 1, []string{"--timeout=5s"},
		"ok    manager  Lease "+ns+"/redlease-manager.redlease.io renewed by",
		"FAIL  store    ClusterLockStore "+storeName+" is not Ready: "+reason+": ")

	mgr.kill(t)
	var lease coordinationv1.Lease
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "redlease-manager.redlease.io"}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.RenewTime == nil ||
		time.Since(lease.Spec.RenewTime.Time) > time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second {
		t.Fatalf("right after the kill the Lease should still look held and fresh: %+v", lease.Spec)
	}
	check.want(t, 1, []string{"--timeout=3s"},
		"FAIL  manager  Lease "+ns+"/redlease-manager.redlease.io held by "+*lease.Spec.HolderIdentity+" was not renewed in the",
		"the manager holding it is not running")
}

// waitStoreNotReady waits until the store's Ready condition is False for
// its current generation, and returns the reason.
func waitStoreNotReady(t *testing.T, c client.Client, name string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var cs v1alpha1.ClusterLockStore
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, &cs)
		if cond := apimeta.FindStatusCondition(cs.Status.Conditions, v1alpha1.ConditionReady); err == nil && cond != nil &&
			cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == cs.Generation {
			return cond.Reason
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterLockStore %s still Ready after its Redis was killed: %v %+v", name, err, cs.Status.Conditions)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

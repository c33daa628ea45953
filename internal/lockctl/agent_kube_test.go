/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// In Kubernetes mode the agent takes DistributedLocks as pkg/kube does
// (status.key, the credentials Secret) and passes the API server's answers
// on: NOT_FOUND for a lock that does not exist, PERMISSION_DENIED for one
// the pod's ServiceAccount may not read.
func TestAgentServesDistributedLocks(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	publishLock(t, env, ns, "nightly", ns+"/nightly-run", srv.Addr(), "s3cret")

	a := startAgent(t, "--kubeconfig", kubeconfig, "-n", ns)
	c := a.client(true)
	stream, err := c.Acquire(t.Context(), connect.NewRequest(&lockv1.AcquireRequest{Lock: ref("nightly")}))
	if err != nil || !stream.Receive() {
		t.Fatalf("acquire: %v %v", err, stream.Err())
	}
	if g := stream.Msg().GetGranted(); g.GetKey() != ns+"/nightly-run" || g.GetFence() == 0 {
		t.Fatalf("grant %v, want status.key %s/nightly-run with a fence", g, ns)
	}
	get, err := c.Get(t.Context(), connect.NewRequest(&lockv1.GetRequest{Lock: ref(ns + "/nightly")}))
	if err != nil || len(get.Msg.GetHolders()) != 1 {
		t.Fatalf("get NAMESPACE/NAME: %v %v", get, err)
	}
	noValue(t, srv.Client(t).Get(t.Context(), ns+"/nightly-run").Val(), stream.Msg(), get.Msg)

	for _, tt := range []struct {
		name string
		ref  *lockv1.LockRef
		code connect.Code
	}{
		{"a lock that does not exist", ref("missing"), connect.CodeNotFound},
		{"a malformed name", ref("a/b/c"), connect.CodeInvalidArgument},
		{"permits on a DistributedLock", &lockv1.LockRef{Name: "nightly", Permits: 2}, connect.CodeInvalidArgument},
	} {
		if _, err := c.Get(t.Context(), connect.NewRequest(&lockv1.GetRequest{Lock: tt.ref})); connect.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.code)
		}
	}

	outsider := startAgent(t, "--kubeconfig", env.KubeconfigAs(t, "system:serviceaccount:"+ns+":nobody"), "-n", ns)
	_, err = outsider.client(false).Get(t.Context(), connect.NewRequest(&lockv1.GetRequest{Lock: ref("nightly")}))
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a ServiceAccount without the Role: %v, want PERMISSION_DENIED with the API server's answer", err)
	}
}

// `lockctl sidecar` prints a strategic-merge patch that adds the agent as
// a native sidecar (an init container that always restarts) with the
// socket's emptyDir mounted in the app container, and nothing else.
func TestSidecarPatchesAWorkload(t *testing.T) {
	r := lockctl(t, "sidecar", "--container", "worker", "--image", "example.com/lockctl:v1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	deploy := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "example.com/worker:v1"}, {Name: "other", Image: "example.com/other:v1"}}}}}}
	original, err := yaml.Marshal(deploy)
	if err != nil {
		t.Fatal(err)
	}
	originalJSON, _ := yaml.YAMLToJSON(original)
	patch, err := yaml.YAMLToJSON([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(originalJSON, patch, appsv1.Deployment{})
	if err != nil {
		t.Fatalf("the patch does not apply: %v\n%s", err, r.stdout)
	}
	var out appsv1.Deployment
	if err := yaml.Unmarshal(merged, &out); err != nil {
		t.Fatal(err)
	}
	checkSidecar(t, out.Spec.Template.Spec)
}

func checkSidecar(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 2 || len(pod.Volumes) != 1 {
		t.Fatalf("patched pod: %d init containers, %d containers, %d volumes; want 1, 2, 1", len(pod.InitContainers), len(pod.Containers), len(pod.Volumes))
	}
	agent, app, vol := pod.InitContainers[0], pod.Containers[0], pod.Volumes[0]
	switch {
	case agent.RestartPolicy == nil || *agent.RestartPolicy != corev1.ContainerRestartPolicyAlways:
		t.Fatal("the agent is not a native sidecar (restartPolicy Always)")
	case agent.Image != "example.com/lockctl:v1" || len(agent.Args) == 0 || agent.Args[0] != "agent":
		t.Fatalf("agent container %s %v", agent.Image, agent.Args)
	case vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory:
		t.Fatalf("volume %v, want an in-memory emptyDir", vol)
	case app.Image != "example.com/worker:v1" || len(app.VolumeMounts) != 1 || app.VolumeMounts[0].Name != vol.Name:
		t.Fatalf("app container %v: its image kept, the socket's volume mounted", app)
	case len(pod.Containers[1].VolumeMounts) != 0:
		t.Fatal("the other container got the socket too")
	case pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil:
		t.Fatal("no fsGroup: a container running as another user cannot open the socket")
	}
}

package lockctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/internal/kubetest"
)

// TestVersion: lockctl --version and `version --client` print lockctl's
// version (a plain go build says dev: make stamps the VERSION file); with
// a cluster, `version` adds the redlease.io versions the API server serves
// and the manager Deployment's image.
func TestVersion(t *testing.T) {
	if r := lockctl(t, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "lockctl version dev") {
		t.Errorf("--version: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := lockctl(t, "version", "--client"); r.code != 0 || !strings.HasPrefix(r.stdout, "lockctl: dev") || strings.Contains(r.stdout, "served") {
		t.Errorf("version --client: exit %d, stdout %q", r.code, r.stdout)
	}
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	labels := map[string]string{"app.kubernetes.io/name": "redlease", "app.kubernetes.io/component": "manager"}
	image := "redlease/manager:v9.9.9@sha256:" + strings.Repeat("ab", 32)
	if err := env.Client.Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controller-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image}}}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	r := lockctl(t, "version", "--kubeconfig", kubeconfig, "-o", "json")
	var v struct {
		Server struct {
			Kubernetes    string
			CRDVersions   []string
			ManagerImages []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("version -o json: exit %d, %v, stdout %q, stderr %q", r.code, err, r.stdout, r.stderr)
	}
	want := ns + "/controller-manager=" + image
	if v.Server.Kubernetes == "" || strings.Join(v.Server.CRDVersions, ",") != "v1alpha1" || !strings.Contains(strings.Join(v.Server.ManagerImages, " "), want) {
		t.Errorf("version: %s; want the Kubernetes version, v1alpha1 served, and %s", r.stdout, want)
	}
	if r := lockctl(t, "version", "--kubeconfig", "/nonexistent"); r.code == 0 {
		t.Errorf("version with a missing --kubeconfig: exit 0, stdout %q; want the error", r.stdout)
	}
}

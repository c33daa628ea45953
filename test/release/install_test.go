package release_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/kubetest"
)

// tool is <repo>/bin/NAME (make tools); missing, the command fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "bin", name)
}

// run runs a program and returns its stdout; a failure fails the test.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: bin/ tools and the binaries this test built
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestInstall installs the release as a user would on a real API server
// (no kubelet: the objects are checked, not the pods): `kubectl apply -f
// install.yaml` is accepted whole and serves redlease.io/v1alpha1, the
// released lockctl's `version` then sees those versions and the manager's
// image pinned by the archive's digest; and the packaged chart installs
// (`helm install`, CRDs left to install.yaml) beside it.
func TestInstall(t *testing.T) {
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	kubeconfig := env.KubeconfigFile(t)
	run(t, tool(t, "kubectl"), "--kubeconfig", kubeconfig, "apply", "-f", distFile(t, "install.yaml"))
	run(t, tool(t, "kubectl"), "--kubeconfig", kubeconfig, "wait", "--for", "condition=Established", "--timeout", "60s",
		"crd/distributedlocks.redlease.io", "crd/lockstores.redlease.io", "crd/clusterlockstores.redlease.io")

	out := run(t, distFile(t, "lockctl-"+version+"-linux-"+runtime.GOARCH), "version", "--kubeconfig", kubeconfig, "-o", "json")
	var v struct {
		Client struct{ Version string }
		Server struct {
			CRDVersions   []string
			ManagerImages []string
		}
	}
	unmarshal(t, []byte(out), &v)
	wantImage := registry + "/redlease/manager:" + version + "@" + imageDigest(t, "manager")
	if v.Client.Version != version || !slices.Equal(v.Server.CRDVersions, []string{"v1alpha1"}) ||
		len(v.Server.ManagerImages) != 1 || !strings.HasSuffix(v.Server.ManagerImages[0], "="+wantImage) {
		t.Errorf("lockctl version after kubectl apply -f install.yaml:\n%s\nwant client %s, v1alpha1 served, the manager at %s", out, version, wantImage)
	}

	chart := distFile(t, "redlease-"+strings.TrimPrefix(version, "v")+".tgz")
	run(t, tool(t, "helm"), "--kubeconfig", kubeconfig, "install", "beside", chart, "--namespace", "helm-install", "--create-namespace", "--set", "crds.enabled=false")
}

// TestChartPackage: the packaged chart is versioned as the release and
// pins both images by the digests of the archives beside it, and its
// Artifact Hub metadata names the same images.
func TestChartPackage(t *testing.T) {
	chart := distFile(t, "redlease-"+strings.TrimPrefix(version, "v")+".tgz")
	var meta struct {
		Version, AppVersion string
		Annotations         map[string]string
	}
	if err := yaml.Unmarshal([]byte(run(t, tool(t, "helm"), "show", "chart", chart)), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != strings.TrimPrefix(version, "v") || meta.AppVersion != version {
		t.Errorf("the packaged chart is version %q, appVersion %q; want %s, %s", meta.Version, meta.AppVersion, strings.TrimPrefix(version, "v"), version)
	}
	rendered := run(t, tool(t, "helm"), "template", "redlease", chart, "--namespace", "redlease-system")
	for _, image := range []string{"manager", "lockctl"} {
		want := registry + "/redlease/" + image + ":" + version + "@" + imageDigest(t, image)
		if !strings.Contains(rendered, "image: "+want) {
			t.Errorf("the packaged chart renders no %q", "image: "+want)
		}
		if !strings.Contains(meta.Annotations["artifacthub.io/images"], "image: "+want+"\n") {
			t.Errorf("the packaged chart's artifacthub.io/images does not name %s:\n%s", want, meta.Annotations["artifacthub.io/images"])
		}
	}
	install, err := os.ReadFile(distFile(t, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := registry + "/redlease/manager:" + version + "@" + imageDigest(t, "manager"); !strings.Contains(string(install), want) {
		t.Errorf("install.yaml does not run %s", want)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/cosigntest"
	"github.com/redlease/redlease/internal/locktest"
)

// registryLog is the request log of the scenario's registry.
type registryLog string

// requests are the lines logged so far ("METHOD /path?query").
func (l registryLog) requests(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(string(l))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// serveRegistry starts the OCI registry (hack/ocibuild/cmd/registry,
// built by hack/node/images.sh) on the bridge until t ends.
func serveRegistry(t *testing.T) registryLog {
	t.Helper()
	addr := env(t, "REGISTRY")
	log := filepath.Join(env(t, "NODE_DIR"), "log", "registry.log")
	// Not t.Context(): the registry must outlive the test's last command.
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), filepath.Join(root, "dist", "bin", "node", "registry"), "serve", "-addr", addr, "-log", log) //nolint:gosec // G204: the harness's registry
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	locktest.Eventually(t, 30*time.Second, "the registry answers", func() error {
		resp, err := http.Get("http://" + addr + "/v2/") //nolint:noctx // a probe of the harness's registry
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
	return registryLog(log)
}

// pulled fails t unless the registry was asked, after its first skip
// requests, for the manifest digest of repository (with query, e.g.
// ns=ghcr.io when containerd asked it as the mirror of ghcr.io).
func (l registryLog) pulled(t *testing.T, skip int, repository, digest, query string) {
	t.Helper()
	want := "/v2/" + repository + "/manifests/" + digest
	for _, r := range l.requests(t)[skip:] {
		if strings.Contains(r, want) && strings.Contains(r, query) {
			return
		}
	}
	t.Errorf("the registry was not asked for %s%s; its requests:\n%s", want, query, strings.Join(l.requests(t)[skip:], "\n"))
}

// managerImages fails t unless every manager pod runs the image digest.
func managerImages(t *testing.T, cs *kubernetes.Clientset, digest string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(operatorNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if !strings.HasSuffix(c.ImageID, digest) {
				t.Errorf("pod %s runs %s (%s), want the release's %s", p.Name, c.Image, c.ImageID, digest)
			}
		}
	}
}

// TestScenario1FromRegistry: the release (make release, as hack/node/
// images.sh builds it) installed the way users install it, after scenario
// 9 removed the chart: make publish pushes its images and chart to an OCI
// registry on the bridge and signs them with a throwaway cosign key;
// cosign verify --key accepts both images and the chart before anything is
// installed, and refuses them under another key and an unsigned copy of
// the manager; helm install oci://.../redlease/charts/redlease --plain-http
// with global.imageRegistry set to that registry (the images' digests
// pinned by the release): the kubelet pulls them from it, two managers run
// the release's digest, helm test passes; then, uninstalled, kubectl apply
// -f install.yaml, whose ghcr.io image names containerd pulls through its
// mirror (hosts.toml) from the same registry.
func TestScenario1FromRegistry(t *testing.T) {
	cs := cluster(t)
	if out := kubectl(t, "get", "crd", "-o", "name"); strings.Contains(out, "redlease.io") {
		t.Fatalf("needs scenario 9 before it (the chart and CRDs uninstalled): %s", out)
	}
	reg, rel := env(t, "REGISTRY"), filepath.Join(root, "dist", "node", "release")
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(b))
	log := serveRegistry(t)
	digests := publishVerified(t, reg, rel, version)

	helm(t, "install", release, "oci://"+reg+"/redlease/charts/redlease", "--version", strings.TrimPrefix(version, "v"), "--plain-http",
		"-n", operatorNS, "--create-namespace", "--wait", "--timeout", "3m", "--set", "replicaCount=2",
		"--set", "global.imageRegistry="+reg)
	managersUp(t, cs, "redlease-controller-manager", 2)
	managerImages(t, cs, digests["manager"])
	helm(t, "test", release, "-n", operatorNS, "--timeout", "3m")
	for c, d := range digests {
		log.pulled(t, 0, "redlease/"+c, d, "")
	}
	helm(t, "uninstall", release, "-n", operatorNS, "--wait", "--timeout", "3m")
	kubectl(t, "delete", "crd", "distributedlocks.redlease.io", "lockstores.redlease.io", "clusterlockstores.redlease.io", "--timeout=1m")

	mark := len(log.requests(t))
	kubectl(t, "apply", "-f", filepath.Join(rel, "install.yaml"))
	managersUp(t, cs, "redlease-controller-manager", 1)
	managerImages(t, cs, digests["manager"])
	log.pulled(t, mark, "redlease/manager", digests["manager"], "ns=ghcr.io")
	kubectl(t, "delete", "-f", filepath.Join(rel, "install.yaml"), "--timeout=2m")
}

// publishVerified publishes the release in rel to reg with make publish,
// signed with a throwaway cosign key, and fails t unless cosign verify
// --key accepts both images and the chart by the tags a user installs
// (each signature naming the digest the release recorded for its image)
// and refuses them under another key, and a copy of the manager's image
// pushed without its signature. It returns the images' digests.
func publishVerified(t *testing.T, reg, rel, version string) map[string]string {
	t.Helper()
	cosign := cosigntest.New(t, root)
	keys := t.TempDir()
	key, pub := cosign.KeyPair(t, keys, "release")
	_, otherPub := cosign.KeyPair(t, keys, "other")
	refs := cosign.Publish(t, root, rel, reg, version, key)
	digests := map[string]string{}
	for i, c := range []string{"manager", "lockctl"} {
		want, err := os.ReadFile(filepath.Join(rel, c+"-"+version+".tar.digest")) //nolint:gosec // G304: the release's files
		if err != nil {
			t.Fatal(err)
		}
		digests[c] = strings.TrimSpace(string(want))
		if refs[i] != reg+"/redlease/"+c+"@"+digests[c] {
			t.Fatalf("make publish printed %s, want the release's %s@%s", refs[i], c, digests[c])
		}
	}
	_, chartDigest, _ := strings.Cut(refs[2], "@")
	wantDigests := map[string]string{
		reg + "/redlease/manager:" + version:                                  digests["manager"],
		reg + "/redlease/lockctl:" + version:                                  digests["lockctl"],
		reg + "/redlease/charts/redlease:" + strings.TrimPrefix(version, "v"): chartDigest,
	}
	for ref, want := range wantDigests {
		got, err := cosign.Verify(t.Context(), pub, ref)
		if err != nil || len(got) != 1 || got[0] != want {
			t.Fatalf("cosign verify %s: %v, signatures naming %v; want one naming %s", ref, err, got, want)
		}
		if _, err := cosign.Verify(t.Context(), otherPub, ref); !errors.Is(err, cosigntest.ErrVerify) {
			t.Errorf("cosign verify %s under another key: %v, want it refused", ref, err)
		}
	}
	copied := reg + "/redlease/unsigned:" + version
	command(t, filepath.Join(root, "dist", "bin", "node", "registry"), "push", "-archive", filepath.Join(rel, "manager-"+version+".tar"), "-to", copied)
	if _, err := cosign.Verify(t.Context(), pub, copied); !errors.Is(err, cosigntest.ErrVerify) || !strings.Contains(err.Error(), "no signatures found") {
		t.Errorf("cosign verify %s (the manager's image without its signature): %v, want it refused", copied, err)
	}
	return digests
}

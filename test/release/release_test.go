// Package release_test builds a release with `make release` (one platform:
// the host's linux/GOARCH, so that it stays quick) and checks what a user
// downloads: the checksums, the image archives and their digests, the
// version stamped everywhere, the SBOMs, the chart from its package, and
// install.yaml applied to a real API server.
package release_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/internal/kubetest"
)

// version is the release the tests build: any vX.Y.Z works, and one that
// is not the VERSION file's shows that make release's VERSION wins.
const version = "v0.0.1-test.1"

// registry is the registry the tests' release names its images under: a
// mirror rather than the default ghcr.io shows that make release's
// REGISTRY is stamped everywhere (TestReleaseNamesItsRegistry).
const registry = "mirror.example:5000"

var (
	buildOnce sync.Once
	distDir   string
	buildErr  error
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime; nothing here reads it
	code := m.Run()
	if distDir != "" {
		_ = os.RemoveAll(distDir) // a temporary directory: leaving it fails nothing
	}
	os.Exit(code)
}

// dist runs make release into a temporary directory once per test binary
// and returns that directory.
func dist(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := kubetest.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if distDir, buildErr = os.MkdirTemp("", "redlease-release-"); buildErr != nil {
			return
		}
		plat := "linux/" + runtime.GOARCH
		cmd := exec.Command("make", "-C", root, "--no-print-directory", "release", //nolint:noctx,gosec // noctx: bounded by the test binary's timeout, sync.Once has no context to give; G204: make and this repository's release target
			"VERSION="+version, "REGISTRY="+registry, "DIST="+distDir, "IMAGE_PLATFORMS="+plat, "LOCKCTL_PLATFORMS="+plat)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make release: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return distDir
}

func distFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(dist(t), name)
}

// TestArtifacts: every artifact the release promises is there, and
// SHA256SUMS names each file of dist/ with its right hash.
func TestArtifacts(t *testing.T) {
	dir := dist(t)
	arch := "linux-" + runtime.GOARCH
	for _, name := range []string{
		"manager-" + version + ".tar", "manager-" + version + ".tar.digest", "manager-" + version + ".tar.cdx.json",
		"lockctl-" + version + ".tar", "lockctl-" + version + ".tar.digest", "lockctl-" + version + ".tar.cdx.json",
		"lockctl-" + version + "-" + arch, "lockctl-" + version + "-" + arch + ".cdx.json",
		"kubectl-redlease-" + version + "-" + arch + ".tar.gz", "redlease.yaml",
		"redlease-" + strings.TrimPrefix(version, "v") + ".tgz", "install.yaml", "crds.yaml", "argocd-health.yaml", "samples-" + version + ".tar.gz", "SHA256SUMS",
	} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
		}
	}
	sums := readSums(t, filepath.Join(dir, "SHA256SUMS"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name())) //nolint:gosec // G304: a file of the release this test built
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); sums[e.Name()] != got {
			t.Errorf("SHA256SUMS says %s is %q, it is %s", e.Name(), sums[e.Name()], got)
		}
		delete(sums, e.Name())
	}
	if len(sums) > 0 {
		t.Errorf("SHA256SUMS names files dist/ does not have: %v", sums)
	}
}

// readSums parses sha256sum's output: file name to hash.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path) //nolint:gosec // G304: the release's SHA256SUMS
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: line %q", sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

// TestLockctlBinaryVersion: the released lockctl reports the release's
// version (stamped by make release from its VERSION, not the file's).
func TestLockctlBinaryVersion(t *testing.T) {
	bin := distFile(t, "lockctl-"+version+"-linux-"+runtime.GOARCH)
	for _, args := range [][]string{{"--version"}, {"version", "--client"}} {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput() //nolint:gosec // G204: the binary this test built
		if err != nil || !strings.Contains(string(out), version+" ") {
			t.Errorf("lockctl %v: %v, %q: want the version %s", args, err, out, version)
		}
	}
}

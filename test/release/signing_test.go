package release_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redlease/redlease/internal/cosigntest"
	"github.com/redlease/redlease/internal/kubetest"
)

// serveRegistry builds and starts the OCI registry of make test-node
// (hack/ocibuild/cmd/registry) on a free loopback port until t ends, and
// returns its address and binary (whose push subcommand copies an archive).
func serveRegistry(t *testing.T, root string) (addr, bin string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "registry")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/registry") //nolint:gosec // G204: this repository's registry
	build.Dir = filepath.Join(root, "hack", "ocibuild")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/registry: %v\n%s", err, out)
	}
	// Not t.Context(): it must outlive the last cosign the test runs.
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, "serve", "-addr", "127.0.0.1:0", "-log", filepath.Join(dir, "requests.log")) //nolint:gosec // G204: the registry built above
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	// Its first line is the address it listens on.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the registry printed no address: %v", err)
	}
	return strings.TrimSpace(line), bin
}

// TestPublishSigned: make publish pushes the release's images and chart to
// a registry (on loopback) and signs each by digest with the given cosign
// key; cosign verify --key accepts all three, by digest and by tag, each
// signature naming the digest the release recorded. And the check bites:
// cosign refuses each artifact under another key's public key, the manager's
// image copied to another repository without its signature, the chart
// pushed elsewhere, and the manager's tag moved to another image (lockctl's,
// itself signed, but not as the manager).
func TestPublishSigned(t *testing.T) {
	dir := dist(t)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	reg, registryBin := serveRegistry(t, root)
	cosign := cosigntest.New(t, root)
	keys := t.TempDir()
	key, pub := cosign.KeyPair(t, keys, "release")
	_, otherPub := cosign.KeyPair(t, keys, "other")

	refs := cosign.Publish(t, root, dir, reg, version, key)
	chartTag := reg + "/redlease/charts/redlease:" + strings.TrimPrefix(version, "v")
	manager, lockctl, chart := refs[0], refs[1], refs[2]
	for i, c := range []string{"manager", "lockctl"} {
		want, err := os.ReadFile(distFile(t, c+"-"+version+".tar.digest")) //nolint:gosec // G304: the release's files
		if err != nil {
			t.Fatal(err)
		}
		if w := reg + "/redlease/" + c + "@" + strings.TrimSpace(string(want)); refs[i] != w {
			t.Errorf("make publish printed %s, want %s", refs[i], w)
		}
	}
	if !strings.HasPrefix(chart, reg+"/redlease/charts/redlease@sha256:") {
		t.Errorf("make publish printed %s for the chart, want %s/redlease/charts/redlease@sha256:...", chart, reg)
	}

	for _, ref := range []string{manager, lockctl, chart, reg + "/redlease/manager:" + version, reg + "/redlease/lockctl:" + version, chartTag} {
		digests, err := cosign.Verify(t.Context(), pub, ref)
		if err != nil {
			t.Errorf("%s is refused under the release's key: %v", ref, err)
			continue
		}
		if want := digestOf(manager, lockctl, chart, ref); len(digests) != 1 || digests[0] != want {
			t.Errorf("%s: the verified signatures name %v, want %s", ref, digests, want)
		}
	}

	copied := reg + "/redlease/copy:" + version
	run(t, registryBin, "push", "-archive", distFile(t, "manager-"+version+".tar"), "-to", copied)
	run(t, tool(t, "helm"), "push", distFile(t, "redlease-"+strings.TrimPrefix(version, "v")+".tgz"), "oci://"+reg+"/elsewhere", "--plain-http")
	for _, tc := range []struct{ what, pub, ref string }{
		{"the manager under another key", otherPub, manager},
		{"lockctl under another key", otherPub, lockctl},
		{"the chart under another key", otherPub, chart},
		{"the manager copied without its signature", pub, copied},
		{"the chart pushed elsewhere", pub, reg + "/elsewhere/redlease:" + strings.TrimPrefix(version, "v")},
	} {
		refused(t, cosign, tc.what, tc.pub, tc.ref)
	}
	// Last: it moves the signed tag.
	run(t, registryBin, "push", "-archive", distFile(t, "lockctl-"+version+".tar"), "-to", reg+"/redlease/manager:"+version)
	refused(t, cosign, "the manager's tag moved to lockctl's image", pub, reg+"/redlease/manager:"+version)
}

// refused fails t unless cosign verify --key pub refuses ref.
func refused(t *testing.T, cosign *cosigntest.Cosign, what, pub, ref string) {
	t.Helper()
	digests, err := cosign.Verify(t.Context(), pub, ref)
	if err == nil {
		t.Errorf("%s (%s): verified, signatures naming %v; want it refused", what, ref, digests)
		return
	}
	if !errors.Is(err, cosigntest.ErrVerify) || !strings.Contains(err.Error(), "no matching signatures") && !strings.Contains(err.Error(), "no signatures found") {
		t.Errorf("%s (%s): refused for another reason than its signature: %v", what, ref, err)
	}
}

// digestOf is the digest of the published reference (of manager, lockctl
// and chart) that ref names, by digest or by tag.
func digestOf(manager, lockctl, chart, ref string) string {
	for _, r := range []string{manager, lockctl, chart} {
		repo, digest, _ := strings.Cut(r, "@")
		if strings.HasPrefix(ref, repo+"@") || strings.HasPrefix(ref, repo+":") {
			return digest
		}
	}
	return ""
}

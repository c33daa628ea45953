package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestBuildWritesAMultiPlatformNonRootImage builds an archive for
// linux/amd64 and linux/arm64 and reads it back as an OCI layout, as
// containerd would: one index named by the tag, one image per platform,
// each with the CA bundle at the conventional path, the binary as a
// non-root entrypoint and the org.opencontainers.image.* labels.
func TestBuildWritesAMultiPlatformNonRootImage(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	caPEM := "-----BEGIN CERTIFICATE-----\nnot really a CA\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(ca, []byte(caPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	var plats platforms
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, arch, "lockctl")
		if err := os.MkdirAll(filepath.Dir(bin), 0o750); err != nil {
			t.Fatal(err)
		}
		// 0o600: build only reads it; the image gives the entry its own mode.
		if err := os.WriteFile(bin, []byte("#!not really a "+arch+" binary"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := plats.Set("linux/" + arch + "=" + bin); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "image.tar")
	if err := build(options{platforms: plats, ca: ca, tag: "redlease/lockctl:v0.0.0-test", revision: "abc123", out: out}); err != nil {
		t.Fatal(err)
	}

	idx, err := readArchive(t, out).ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v, %+v; want one image index", err, top)
	}
	if got := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != "v0.0.0-test" {
		t.Errorf("ref.name annotation %q, want the tag", got)
	}
	// What the kubelet asks containerd for, given redlease/lockctl:v0.0.0-test.
	if got := top.Manifests[0].Annotations["io.containerd.image.name"]; got != "docker.io/redlease/lockctl:v0.0.0-test" {
		t.Errorf("containerd name %q", got)
	}
	var archs []string
	for plat, img := range platformImages(t, idx) {
		archs = append(archs, plat)
		checkImage(t, img, strings.TrimPrefix(plat, "linux/"), caPEM)
	}
	slices.Sort(archs)
	if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", archs)
	}
}

// checkImage: the config (entrypoint, user, platform, labels) and the
// files (CA bundle, binary) of one platform's image.
func checkImage(t *testing.T, img v1.Image, arch, caPEM string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/lockctl" {
		t.Errorf("%s: entrypoint %v, want [/lockctl]", arch, got)
	}
	if cfg.Config.User != nonRoot || cfg.OS != "linux" || cfg.Architecture != arch {
		t.Errorf("%s: config user %q, %s/%s", arch, cfg.Config.User, cfg.OS, cfg.Architecture)
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": "v0.0.0-test", "org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source": "https://github.com/redlease/redlease", "org.opencontainers.image.licenses": "Apache-2.0"} {
		if cfg.Config.Labels[k] != want {
			t.Errorf("%s: label %s = %q, want %q", arch, k, cfg.Config.Labels[k], want)
		}
	}
	files, contents := imageFiles(t, img)
	if contents[caPath] != caPEM || files[caPath].Mode != 0o644 {
		t.Errorf("%s: /%s = %q (mode %v), want the CA bundle, world-readable", arch, caPath, contents[caPath], files[caPath])
	}
	if bin := files["lockctl"]; bin == nil || bin.Mode != 0o755 || bin.Uid != 65532 || contents["lockctl"] != "#!not really a "+arch+" binary" {
		t.Errorf("%s: /lockctl = %+v %q, want this platform's binary, executable", arch, bin, contents["lockctl"])
	}
}

// platformImages are the images of an archive's one image index, by
// platform (OS/ARCH).
func platformImages(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	top, err := idx.IndexManifest()
	if err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v, %+v; want one image index", err, top)
	}
	images, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, m := range im.Manifests {
		img, err := images.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[m.Platform.OS+"/"+m.Platform.Architecture] = img
	}
	return out
}

// imageFiles reads an image's file system: each file's header and content.
func imageFiles(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string]string) {
	t.Helper()
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name], contents[hdr.Name] = hdr, string(b)
	}
	return files, contents
}

// TestFileFlagAddsFilesBesideTheBinary: -file puts a file (a shared
// library, say) at its path in the image, root-owned, with its source's mode,
// the binary still the entrypoint.
func TestFileFlagAddsFilesBesideTheBinary(t *testing.T) {
	dir := t.TempDir()
	ca, bin, lib := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "redis-server"), filepath.Join(dir, "libfoo.so.1")
	for f, mode := range map[string]os.FileMode{ca: 0o600, bin: 0o600, lib: 0o755} {
		if err := os.WriteFile(f, []byte(filepath.Base(f)), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	var plats platforms
	var fs files
	if err := plats.Set("linux/amd64=" + bin); err != nil {
		t.Fatal(err)
	}
	if err := fs.Set(lib + "=/lib/x86_64-linux-gnu/libfoo.so.1"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := build(options{platforms: plats, files: fs, ca: ca, tag: "redlease/redis:test", out: out}); err != nil {
		t.Fatal(err)
	}
	idx, err := readArchive(t, out).ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	img := platformImages(t, idx)["linux/amd64"]
	if img == nil {
		t.Fatal("no linux/amd64 image")
	}
	files, contents := imageFiles(t, img)
	got := files["lib/x86_64-linux-gnu/libfoo.so.1"]
	if got == nil || got.Mode != 0o755 || got.Uid != 0 || contents["lib/x86_64-linux-gnu/libfoo.so.1"] != "libfoo.so.1" {
		t.Errorf("/lib/x86_64-linux-gnu/libfoo.so.1 = %+v, want the file, root-owned, mode 0755", got)
	}
	if files["redis-server"] == nil {
		t.Error("the binary is missing beside the -file files")
	}
}

// readArchive unpacks an OCI archive with tar, the way an importer sees it.
func readArchive(t *testing.T, archive string) layout.Path {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), "tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil { //nolint:gosec // G204: tar on the test's own archive
		t.Fatalf("tar -xf: %v\n%s", err, out)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileFlag(t *testing.T) {
	for _, bad := range []string{"lib.so", "=/lib/lib.so", "lib.so=", "lib.so=/"} {
		var f files
		if err := f.Set(bad); err == nil {
			t.Errorf("-file %q accepted", bad)
		}
	}
}

func TestPlatformFlag(t *testing.T) {
	for _, bad := range []string{"linux/amd64", "amd64=bin", "linux/=bin", "/arm64=bin", "linux/arm64="} {
		var p platforms
		if err := p.Set(bad); err == nil {
			t.Errorf("-platform %q accepted", bad)
		}
	}
}

// TestContainerdName: Docker Hub references are named as the kubelet asks
// for them (docker.io, library/ for official images), others as given.
func TestContainerdName(t *testing.T) {
	for ref, want := range map[string]string{
		"redlease/manager:v0.1.0":              "docker.io/redlease/manager:v0.1.0",
		"busybox:1.36":                         "docker.io/library/busybox:1.36",
		"registry.local/redlease/redis:7.0.15": "registry.local/redlease/redis:7.0.15",
	} {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := containerdName(tag); got != want {
			t.Errorf("%s: containerd name %q, want %q", ref, got, want)
		}
	}
}

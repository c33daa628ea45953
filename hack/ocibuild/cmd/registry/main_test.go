package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeArchive tars an OCI layout holding idx, as hack/ocibuild writes one.
func writeArchive(t *testing.T, dir string, files func(tw *tar.Writer)) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(archive) //nolint:gosec // G304: in t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	if dir != "" {
		if err := tw.AddFS(os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	if files != nil {
		files(tw)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return archive
}

// TestPushServesTheArchivesIndex: an OCI archive's image index pushed to the
// registry is served under its digest, and the request log names it.
func TestPushServesTheArchivesIndex(t *testing.T) {
	var requests bytes.Buffer
	srv := httptest.NewServer(handler(&requests))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}

	got, err := push(writeArchive(t, dir, nil), host+"/redlease/test:v1")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("pushed %s, the archive's index is %s", got, want)
	}
	ref, err := name.ParseReference(host+"/redlease/test@"+want.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != want {
		t.Errorf("pulled %s, want %s", d, want)
	}
	for _, r := range []string{"PUT /v2/redlease/test/manifests/v1", "GET /v2/redlease/test/manifests/" + want.String()} {
		if !strings.Contains(requests.String(), r) {
			t.Errorf("the request log does not name %s:\n%s", r, requests.String())
		}
	}
}

// TestUntarKeepsEntriesInsideItsDirectory: an entry naming a path above
// the archive's directory is written inside it, never above.
func TestUntarKeepsEntriesInsideItsDirectory(t *testing.T) {
	archive := writeArchive(t, "", func(tw *tar.Writer) {
		if err := tw.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o600, Size: 1, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	})
	parent := t.TempDir()
	dir := filepath.Join(parent, "layout")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := untar(archive, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("untar wrote above its directory: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "escape")) //nolint:gosec // G304: in t.TempDir()
	if err != nil || string(b) != "x" {
		t.Fatalf("the entry inside the directory: %q, %v", b, err)
	}
}

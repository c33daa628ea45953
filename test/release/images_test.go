package release_test

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// ociDescriptor and ociIndex are the parts of the OCI image layout's JSON
// the test follows: index.json, the image index, a manifest, a config.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
	Config    ociDescriptor   `json:"config"` // of a manifest
}

// TestImageArchives: each image archive is an OCI layout whose one image
// index has the digest the .digest file (and so the chart) names and the
// name <registry>/redlease/<image>:<version> (make release's REGISTRY), one
// manifest per platform built, and the release's version in the
// org.opencontainers.image.version label.
func TestImageArchives(t *testing.T) {
	for _, c := range []string{"manager", "lockctl"} {
		t.Run(c, func(t *testing.T) {
			files := readTar(t, distFile(t, c+"-"+version+".tar"))
			var top ociIndex
			unmarshal(t, files["index.json"], &top)
			if len(top.Manifests) != 1 {
				t.Fatalf("index.json has %d manifests, want the one image index", len(top.Manifests))
			}
			if want := imageDigest(t, c); top.Manifests[0].Digest != want {
				t.Errorf("the archive's image index is %s, %s.tar.digest says %s", top.Manifests[0].Digest, c, want)
			}
			if got, want := top.Manifests[0].Annotations["io.containerd.image.name"], registry+"/redlease/"+c+":"+version; got != want {
				t.Errorf("the archive's image is named %q, want %q", got, want)
			}
			var idx ociIndex
			unmarshal(t, blob(t, files, top.Manifests[0].Digest), &idx)
			if len(idx.Manifests) != 1 || idx.Manifests[0].Platform == nil || idx.Manifests[0].Platform.OS != "linux" {
				t.Fatalf("image index manifests = %+v, want one linux image", idx.Manifests)
			}
			var manifest ociIndex
			unmarshal(t, blob(t, files, idx.Manifests[0].Digest), &manifest)
			var cfg struct {
				Config struct {
					Labels map[string]string `json:"Labels"`
				} `json:"config"`
			}
			unmarshal(t, blob(t, files, manifest.Config.Digest), &cfg)
			if got := cfg.Config.Labels["org.opencontainers.image.version"]; got != version {
				t.Errorf("org.opencontainers.image.version = %q, want %s", got, version)
			}
		})
	}
}

// imageDigest is what make release wrote in <image>-<version>.tar.digest.
func imageDigest(t *testing.T, image string) string {
	t.Helper()
	data, err := os.ReadFile(distFile(t, image+"-"+version+".tar.digest"))
	if err != nil {
		t.Fatal(err)
	}
	d := strings.TrimSpace(string(data))
	if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Fatalf("%s digest %q: want sha256:<64 hex>", image, d)
	}
	return d
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path) //nolint:gosec // G304: an archive this test's release wrote
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	return tarFiles(t, f)
}

// tarFiles is the content of each entry of a tar stream, by name (empty
// for entries that are not regular files).
func tarFiles(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	data, ok := files["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("the archive has no blob %s", digest)
	}
	return data
}

func unmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
}

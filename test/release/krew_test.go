package release_test

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/kubetest"
)

// krewPlugin is what krew requires of a plugin manifest
// (krew.googlecontainertools.github.com/v1alpha2 Plugin).
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string
	Metadata   struct{ Name string }
	Spec       struct {
		Version          string
		Homepage         string
		ShortDescription string `json:"shortDescription"`
		Description      string
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			URI    string
			SHA256 string `json:"sha256"`
			Bin    string
			Files  []struct{ From, To string }
		}
	}
}

// readKrew parses a manifest strictly (a misspelt field fails) and checks
// the fields krew requires.
func readKrew(t *testing.T, path string) krewPlugin {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: the repository's manifest or the release's
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "redlease" ||
		p.Spec.Version == "" || p.Spec.ShortDescription == "" || len(p.Spec.Platforms) == 0 {
		t.Fatalf("%s: not a krew Plugin named redlease with a version, shortDescription and platforms: %+v", path, p)
	}
	for _, pl := range p.Spec.Platforms {
		if pl.URI == "" || pl.SHA256 == "" || pl.Bin != "kubectl-redlease" || pl.Selector.MatchLabels["os"] == "" || pl.Selector.MatchLabels["arch"] == "" {
			t.Errorf("%s: a platform without uri, sha256, os or arch, or whose bin is not kubectl-redlease: %+v", path, pl)
		}
	}
	return p
}

// TestKrewManifest: plugins/redlease.yaml is a krew manifest whose
// version, uri and sha256 are placeholders, and make release fills them:
// the release's redlease.yaml names this release, and each platform's
// archive by its URL and right sha256; the archive holds kubectl-redlease,
// which is lockctl.
func TestKrewManifest(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := readKrew(t, filepath.Join(root, "plugins", "redlease.yaml"))
	if tmpl.Spec.Version != "KREW_VERSION" || tmpl.Spec.Platforms[0].SHA256 != "KREW_SHA256" || tmpl.Spec.Platforms[0].URI != "KREW_URI" {
		t.Errorf("plugins/redlease.yaml: want the placeholders hack/release.sh fills, got %+v", tmpl.Spec)
	}

	p := readKrew(t, distFile(t, "redlease.yaml"))
	archive := "kubectl-redlease-" + version + "-linux-" + runtime.GOARCH + ".tar.gz"
	if p.Spec.Version != version || len(p.Spec.Platforms) != 1 {
		t.Fatalf("release's redlease.yaml: version %q, %d platforms; want %s, the one platform built", p.Spec.Version, len(p.Spec.Platforms), version)
	}
	pl := p.Spec.Platforms[0]
	data, err := os.ReadFile(distFile(t, archive))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if pl.URI != "https://github.com/redlease/redlease/releases/download/"+version+"/"+archive || pl.SHA256 != hex.EncodeToString(sum[:]) ||
		pl.Selector.MatchLabels["os"] != "linux" || pl.Selector.MatchLabels["arch"] != runtime.GOARCH {
		t.Errorf("release's redlease.yaml platform = %+v; want %s by its URL and sha256 %x", pl, archive, sum)
	}
	lockctl, err := os.ReadFile(distFile(t, "lockctl-"+version+"-linux-"+runtime.GOARCH))
	if err != nil {
		t.Fatal(err)
	}
	files := archiveFiles(t, data)
	if string(files["kubectl-redlease"]) != string(lockctl) || len(files["LICENSE"]) == 0 || len(files) != 2 {
		t.Errorf("%s holds %d files; want kubectl-redlease, lockctl itself, and LICENSE", archive, len(files))
	}
}

// archiveFiles is the content of each file of a .tar.gz.
func archiveFiles(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return tarFiles(t, gz)
}

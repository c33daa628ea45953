package release_test

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// imageRefs are the image references of YAML: every `image:` value.
var imageRefs = regexp.MustCompile(`(?m)^[\t -]*image:[ \t]*["']?([^\s"'#]+)`)

// projectImage is an image of the project, under any registry or none.
var projectImage = regexp.MustCompile(`(^|/)redlease/(manager|lockctl)[:@]`)

// TestReleaseNamesItsRegistry: one setting, make release's REGISTRY,
// names every image a user of the release runs: the packaged chart's
// (manager, helm test hook, uninstall hook), install.yaml's and the
// samples'; and the packaged chart still takes a mirror from
// global.imageRegistry alone.
func TestReleaseNamesItsRegistry(t *testing.T) {
	chart := distFile(t, "redlease-"+strings.TrimPrefix(version, "v")+".tgz")
	install, err := os.ReadFile(distFile(t, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	samples := readSamples(t, distFile(t, "samples-"+version+".tar.gz"))
	for _, tc := range []struct {
		what, text, registry string
		min                  int
	}{
		{"the packaged chart", run(t, tool(t, "helm"), "template", "redlease", chart, "--namespace", "redlease-system"), registry, 3},
		{"install.yaml", string(install), registry, 1},
		{"the samples", samples, registry, 2},
		{"the packaged chart with global.imageRegistry=other.example:5000",
			run(t, tool(t, "helm"), "template", "redlease", chart, "--namespace", "redlease-system", "--set", "global.imageRegistry=other.example:5000"),
			"other.example:5000", 3},
	} {
		// The project's images; the samples also run their users' own.
		var refs []string
		for _, m := range imageRefs.FindAllStringSubmatch(tc.text, -1) {
			if projectImage.MatchString(m[1]) {
				refs = append(refs, m[1])
			} else if tc.what != "the samples" {
				t.Errorf("%s runs %s, not an image of the project", tc.what, m[1])
			}
		}
		if len(refs) < tc.min {
			t.Errorf("%s names %d images of the project, want at least %d", tc.what, len(refs), tc.min)
		}
		for _, ref := range refs {
			if !strings.HasPrefix(ref, tc.registry+"/redlease/") {
				t.Errorf("%s runs %s, not an image of %s/redlease", tc.what, ref, tc.registry)
			}
		}
		if strings.Contains(tc.text, "ghcr.io") {
			t.Errorf("%s still names ghcr.io", tc.what)
		}
	}
}

// readSamples concatenates the YAML files of the release's samples archive.
func readSamples(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path) //nolint:gosec // G304: a file of the release this test built
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var b strings.Builder
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".yaml") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		t.Fatalf("%s holds no YAML", path)
	}
	return b.String()
}

package release_test

import (
	"os"
	"runtime"
	"slices"
	"testing"
)

// cdxBOM is the part of a CycloneDX JSON document the test reads.
type cdxBOM struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Components []cdxComponent `json:"components"`
}

// TestSBOMs: each binary's and image's SBOM is CycloneDX, describes that
// artifact at the release's version and lists the Go modules linked in,
// read from the build info (cobra is in lockctl, controller-runtime in the
// manager).
func TestSBOMs(t *testing.T) {
	for file, want := range map[string]struct{ kind, module string }{
		"lockctl-" + version + "-linux-" + runtime.GOARCH + ".cdx.json": {"application", "github.com/spf13/cobra"},
		"lockctl-" + version + ".tar.cdx.json":                          {"container", "github.com/spf13/cobra"},
		"manager-" + version + ".tar.cdx.json":                          {"container", "sigs.k8s.io/controller-runtime"},
	} {
		data, err := os.ReadFile(distFile(t, file))
		if err != nil {
			t.Fatal(err)
		}
		var bom cdxBOM
		unmarshal(t, data, &bom)
		m := bom.Metadata.Component
		if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" || m.Type != want.kind || m.Version != version {
			t.Errorf("%s: format %q %q, component %s %q at %q: want CycloneDX, a %s at %s", file, bom.BOMFormat, bom.SpecVersion, m.Type, m.Name, m.Version, want.kind, version)
		}
		if !slices.Contains(modules(bom.Components), want.module) {
			t.Errorf("%s lists no %s", file, want.module)
		}
	}
}

// modules are the names of the library components, at any depth.
func modules(cs []cdxComponent) []string {
	var out []string
	for _, c := range cs {
		if c.Type == "library" {
			out = append(out, c.Name)
		}
		out = append(out, modules(c.Components)...)
	}
	return out
}

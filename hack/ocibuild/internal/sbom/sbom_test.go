package sbom

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// TestBinaryAndImage: the SBOMs of a Go binary (gosbom, built here: a
// test binary records no modules) and of an image holding it decode as
// CycloneDX and list the modules its build info records, cyclonedx-go
// among them, with the file's SHA-256.
func TestBinaryAndImage(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "gosbom")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", self, "github.com/redlease/redlease/hack/ocibuild/cmd/gosbom").CombinedOutput(); err != nil { //nolint:gosec // G204: the go tool building this module's command
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("not really a CA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := Binary(self, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image("redlease/lockctl", "v1.2.3", "sha256:"+fortyHex+fortyHex[:24], []string{self}, ca)
	if err != nil {
		t.Fatal(err)
	}
	for name, bom := range map[string]*cdx.BOM{"binary": bin, "image": img} {
		path := filepath.Join(dir, name+".cdx.json")
		if err := Write(bom, path); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path) //nolint:gosec // G304: the file this test wrote
		if err != nil {
			t.Fatal(err)
		}
		var got cdx.BOM
		err = cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&got)
		_ = f.Close() // read only
		if err != nil {
			t.Fatalf("%s: decoding: %v", name, err)
		}
		if got.Metadata == nil || got.Metadata.Component == nil || got.Metadata.Component.Version != "v1.2.3" {
			t.Fatalf("%s: metadata %+v, want the component at v1.2.3", name, got.Metadata)
		}
		if mods := libraries(got.Components); !slices.Contains(mods, "github.com/CycloneDX/cyclonedx-go") {
			t.Errorf("%s: modules %v lack github.com/CycloneDX/cyclonedx-go", name, mods)
		}
	}
	if h := (*bin.Metadata.Component.Hashes)[0]; h.Algorithm != cdx.HashAlgoSHA256 || len(h.Value) != 64 {
		t.Errorf("the binary's hash is %+v, want its SHA-256", h)
	}
}

const fortyHex = "0123456789abcdef0123456789abcdef01234567"

func libraries(cs *[]cdx.Component) []string {
	if cs == nil {
		return nil
	}
	var out []string
	for _, c := range *cs {
		if c.Type == cdx.ComponentTypeLibrary {
			out = append(out, c.Name)
		}
		out = append(out, libraries(c.Components)...)
	}
	return out
}

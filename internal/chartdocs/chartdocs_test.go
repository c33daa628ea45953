package chartdocs_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/redlease/redlease/internal/chartdocs"
)

func TestValues(t *testing.T) {
	values := `
# Not listed: no "# --" line.
plain: 1
# -- A documented string,
# on two lines.
name: ""
# A section heading, then a documented key.
image:
  # -- The repository.
  repository: redlease/manager
  # -- Pull secrets.
  pullSecrets: []
# -- A documented map is listed whole.
labels:
  team: locks
`
	got, err := chartdocs.Values([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	want := []chartdocs.Value{
		{Key: "name", Type: "string", Default: `""`, Description: "A documented string, on two lines."},
		{Key: "image.repository", Type: "string", Default: `"redlease/manager"`, Description: "The repository."},
		{Key: "image.pullSecrets", Type: "list", Default: `[]`, Description: "Pull secrets."},
		{Key: "labels", Type: "object", Default: `{"team":"locks"}`, Description: "A documented map is listed whole."},
	}
	if len(got) != len(want) {
		t.Fatalf("Values = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// The chart's README is what make manifests writes from its Chart.yaml and
// values.yaml, and every value a user can set is in it: a leaf of
// values.yaml that no "# --" comment covers fails the test.
func TestChartReadmeIsCurrent(t *testing.T) {
	chartYAML, valuesYAML, readme := read(t, "Chart.yaml"), read(t, "values.yaml"), read(t, "README.md")
	want, err := chartdocs.Render(chartYAML, valuesYAML)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readme, want) {
		t.Fatal("charts/redlease/README.md is stale: run make manifests")
	}
	documented, err := chartdocs.Values(valuesYAML)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &doc); err != nil {
		t.Fatal(err)
	}
	for _, leaf := range leaves(doc.Content[0], "") {
		if !coveredBy(leaf, documented) {
			t.Errorf("values.yaml: %s has no \"# --\" description (helm show readme and Artifact Hub would not list it)", leaf)
		}
	}
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../charts/redlease/" + name) //nolint:gosec // G304: a file of the chart, named by the test
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leaves are the dotted paths of m's values that are not maps with keys.
func leaves(m *yaml.Node, prefix string) []string {
	var out []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			out = append(out, leaves(v, prefix+k.Value+".")...)
			continue
		}
		out = append(out, prefix+k.Value)
	}
	return out
}

// coveredBy reports whether key, or a map holding it, is documented.
func coveredBy(key string, documented []chartdocs.Value) bool {
	for _, d := range documented {
		if key == d.Key || strings.HasPrefix(key, d.Key+".") {
			return true
		}
	}
	return false
}

// Package chartdocs renders the chart's README (charts/redlease/README.md)
// from Chart.yaml and the `# --` comments of values.yaml, the convention
// helm-docs reads, so that `helm show readme` and Artifact Hub show the
// chart's values with the words written beside them. `make manifests`
// writes it (hack/chartreadme); TestChartReadmeIsCurrent fails when it is
// stale.
//
// A key is listed when the comment block right above it has a line that
// starts with "# --": the description is that line's text and the comment
// lines after it. A documented key is listed whole, whatever its value; an
// undocumented map is walked for documented keys inside it.
package chartdocs

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// Value is one documented chart value.
type Value struct {
	Key         string // dotted path, as --set takes it
	Type        string
	Default     string // JSON
	Description string
}

// Values are the documented values of values.yaml, in file order.
func Values(valuesYAML []byte) ([]Value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &doc); err != nil {
		return nil, fmt.Errorf("chartdocs: values.yaml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("chartdocs: values.yaml is not a map")
	}
	var out []Value
	return out, walk(doc.Content[0], "", &out)
}

// walk appends the documented keys of mapping m, under prefix.
func walk(m *yaml.Node, prefix string, out *[]Value) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		desc, ok := description(k.HeadComment)
		switch {
		case ok:
			val, err := leaf(key, v, desc)
			if err != nil {
				return err
			}
			*out = append(*out, val)
		case v.Kind == yaml.MappingNode:
			if err := walk(v, key+".", out); err != nil {
				return err
			}
		}
	}
	return nil
}

// description is the text of comment's "# --" line and the comment lines
// after it; false when there is none.
func description(comment string) (string, bool) {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	words := []string{strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[start]), "# --"))}
	for _, l := range lines[start+1:] {
		words = append(words, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
	}
	return strings.TrimSpace(strings.Join(words, " ")), true
}

// leaf is key's row: its type and default read from v.
func leaf(key string, v *yaml.Node, desc string) (Value, error) {
	var x any
	if err := v.Decode(&x); err != nil {
		return Value{}, fmt.Errorf("chartdocs: %s: %w", key, err)
	}
	def, err := json.Marshal(x)
	if err != nil {
		return Value{}, fmt.Errorf("chartdocs: %s: %w", key, err)
	}
	return Value{Key: key, Type: typeOf(x), Default: string(def), Description: desc}, nil
}

func typeOf(x any) string {
	switch x.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int64, uint64:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "string" // null: a value left empty on purpose
}

//go:embed readme.md.tmpl
var readmeTemplate string

// chart is what the README reads from Chart.yaml.
type chart struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Version     string `yaml:"version"`
	AppVersion  string `yaml:"appVersion"`
	KubeVersion string `yaml:"kubeVersion"`
	Home        string `yaml:"home"`
}

// Render is the chart's README.
func Render(chartYAML, valuesYAML []byte) ([]byte, error) {
	var c chart
	if err := yaml.Unmarshal(chartYAML, &c); err != nil {
		return nil, fmt.Errorf("chartdocs: Chart.yaml: %w", err)
	}
	values, err := Values(valuesYAML)
	if err != nil {
		return nil, err
	}
	t, err := template.New("README").Funcs(template.FuncMap{"cell": cell}).Parse(readmeTemplate)
	if err != nil {
		return nil, fmt.Errorf("chartdocs: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct {
		Chart  chart
		Values []Value
	}{c, values}); err != nil {
		return nil, fmt.Errorf("chartdocs: %w", err)
	}
	return b.Bytes(), nil
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

package docs_test

import (
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestValuesKeys: every chart value README.md and docs/ set (`--set
// key=...`) and every key docs/operator.md's values table lists is in
// charts/redlease/values.yaml.
func TestValuesKeys(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal([]byte(read(t, "charts/redlease/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	set := regexp.MustCompile(`--set[= ]+"?([^\s"]+)`)
	for page, text := range userDocs(t) {
		for _, m := range set.FindAllStringSubmatch(text, -1) {
			for kv := range strings.SplitSeq(m[1], ",") {
				key, _, ok := strings.Cut(kv, "=")
				if ok && !hasValue(values, key) {
					t.Errorf("%s sets %s, which values.yaml does not have", page, key)
				}
			}
		}
	}
	for _, key := range valuesTableKeys(read(t, "docs/operator.md"), values) {
		if !hasValue(values, key) {
			t.Errorf("docs/operator.md's values table lists %s, which values.yaml does not have", key)
		}
	}
}

// valuesTableKeys are the first cells of the table headed "| value |";
// in a cell naming several, a name that is no value of its own is
// relative to the first one's parent ("`controller.probeInterval`,
// `probeTimeout`"); "x.*" is x.
func valuesTableKeys(page string, values map[string]any) []string {
	start := strings.Index(page, "| value | default | meaning |")
	if start < 0 {
		return []string{"(no values table in docs/operator.md)"}
	}
	table, _, _ := strings.Cut(page[start:], "\n\n")
	var out []string
	for _, row := range tableRows(table) {
		parent := ""
		for i, key := range row {
			key = strings.TrimSuffix(key, ".*")
			if i == 0 {
				if dot := strings.LastIndex(key, "."); dot >= 0 {
					parent = key[:dot+1]
				}
			} else if !hasValue(values, key) {
				key = parent + key
			}
			out = append(out, key)
		}
	}
	return out
}

// hasValue: key (dotted, "\." for a dot inside a key) is a value.
func hasValue(values map[string]any, key string) bool {
	var cur any = values
	for _, part := range strings.Split(strings.ReplaceAll(key, `\.`, "\x00"), ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[strings.ReplaceAll(part, "\x00", ".")]; !ok {
			return false
		}
	}
	return true
}

// Package docs_test fails when the documentation and the code drift apart:
// a protocol version, a metric, a chart value or a test the docs name that
// the code lacks, lockctl and manager flags and condition reasons missing
// from either side, a relative link or anchor that leads nowhere, a Go
// snippet that is not a compiled example, and a diagram without its source
// or its alt text.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/kubetest"
)

// read returns a repository file's text.
func read(t *testing.T, rel string) string {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, rel)) //nolint:gosec // G304: a file of this repository
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// userDocs are the pages a user reads: README.md and docs/*.md.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"README.md": read(t, "README.md")}
	for _, p := range pages {
		rel, _ := filepath.Rel(root, p)
		out[rel] = read(t, rel)
	}
	return out
}

// tableKeys are the backquoted first cells of a page's Markdown table rows
// ("| `X` | ..."), a cell naming several ("`--a`, `--b`") split.
func tableKeys(page string) []string {
	var out []string
	for _, row := range tableRows(page) {
		out = append(out, row...)
	}
	return out
}

// tableRows are tableKeys row by row.
func tableRows(page string) [][]string {
	row := regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|")
	cell := regexp.MustCompile("`([^`]+)`")
	var out [][]string
	for _, r := range row.FindAllStringSubmatch(page, -1) {
		var keys []string
		for _, c := range cell.FindAllStringSubmatch(r[1], -1) {
			keys = append(keys, c[1])
		}
		out = append(out, keys)
	}
	return out
}

// missing is want's elements that are not in have, sorted.
func missing(want []string, have func(string) bool) []string {
	var out []string
	for _, w := range want {
		if !have(w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

func contains(s string) func(string) bool {
	return func(sub string) bool { return strings.Contains(s, sub) }
}

// Package docs_test fails when the documentation and the code drift apart:
// a protocol version, a lockctl or manager flag, or a condition reason
// named in one and missing from the other.
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
	row := regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|")
	cell := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, r := range row.FindAllStringSubmatch(page, -1) {
		for _, c := range cell.FindAllStringSubmatch(r[1], -1) {
			out = append(out, c[1])
		}
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

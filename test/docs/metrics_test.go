package docs_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/doctest"
	"github.com/redlease/redlease/internal/kubetest"
)

// TestMetrics: every redlease_* metric README.md and docs/ name is one the
// code declares (a histogram's _bucket, _sum and _count series included).
func TestMetrics(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	defined, err := doctest.DefinedMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`\bredlease_[a-z_]*[a-z]\b`)
	for page, text := range userDocs(t) {
		for _, m := range name.FindAllString(text, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !defined[m] && !defined[base] && !isPrefix(m, defined) {
				t.Errorf("%s names the metric %s, which the code does not define", page, m)
			}
		}
	}
}

// isPrefix: m is how a page names a family of metrics ("redlease_lock_*").
func isPrefix(m string, defined map[string]bool) bool {
	for d := range defined {
		if strings.HasPrefix(d, m+"_") {
			return true
		}
	}
	return false
}

package docs_test

import (
	"regexp"
	"testing"
)

// evidencePages are the pages that hold evidence: the safety model with
// every task page's tests, the Redis format, the benchmarks and the node
// test's record. Every other page of docs/ is a task or concept page.
var evidencePages = map[string]bool{
	"docs/safety.md":     true,
	"docs/protocol.md":   true,
	"docs/benchmarks.md": true,
	"docs/node.md":       true,
}

// TestTaskPagesNameNoTests: the guide's task and concept pages say what to
// do and what happens; the tests that show each statement are listed in
// docs/safety.md ("Evidence for the guide's pages"), so a reader looking
// for how to do something does not read through test names, and a
// statement's evidence is still one link away. The landing README keeps
// its one safety paragraph's citations.
func TestTaskPagesNameNoTests(t *testing.T) {
	cited := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	checked := 0
	for page, text := range userDocs(t) {
		if page == "README.md" || evidencePages[page] {
			continue
		}
		checked++
		for _, line := range proseLines(text) {
			if name := cited.FindString(line); name != "" {
				t.Errorf("%s names %s: move the statement's evidence to docs/safety.md#evidence-for-the-guides-pages", page, name)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d task pages: the page list no longer matches docs/", checked)
	}
}

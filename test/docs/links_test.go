package docs_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// allDocs are userDocs and the pages beside them that state facts and
// cite tests too: CONTRIBUTING.md and SECURITY.md. (CHANGELOG.md records
// what was true then, test names included, and is not checked.)
func allDocs(t *testing.T) map[string]string {
	t.Helper()
	out := userDocs(t)
	for _, page := range []string{"CONTRIBUTING.md", "SECURITY.md"} {
		out[page] = read(t, page)
	}
	return out
}

// TestCitedTestsExist: every test a page names (`TestX`, the evidence
// behind a statement) is a test function of this repository, so renaming
// or removing a test changes the statements that cite it.
func TestCitedTestsExist(t *testing.T) {
	defined := definedTests(t)
	if len(defined) < 300 {
		t.Fatalf("found %d test functions: the walk no longer finds them", len(defined))
	}
	cited := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	seen := 0
	for page, text := range allDocs(t) {
		for _, name := range cited.FindAllString(text, -1) {
			seen++
			if !defined[name] {
				t.Errorf("%s cites %s, which is no test function of this repository", page, name)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("the pages cite %d tests: the pattern no longer matches", seen)
	}
}

// definedTests are the Test functions of every _test.go file of the
// repository (the root module, bench/ and hack/ alike).
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	root := repoRoot(t)
	fn := regexp.MustCompile(`(?m)^func (Test[A-Z][A-Za-z0-9_]*)\(`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p) //nolint:gosec // G304: a file of this repository
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(data), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRelativeLinks: every relative link of README.md, CONTRIBUTING.md,
// SECURITY.md and docs/*.md points at a file or directory of the
// repository, and its #anchor, if any, at a heading of the Markdown page it
// names (GitHub's anchors: the heading's text in lower case, punctuation
// dropped, spaces as hyphens, "-1", "-2" for repeats).
func TestRelativeLinks(t *testing.T) {
	root := repoRoot(t)
	pages := allDocs(t)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(rel string) map[string]bool {
		if a, ok := anchorsOf[rel]; ok {
			return a
		}
		text, ok := pages[rel]
		if !ok {
			text = read(t, rel)
		}
		a := headingAnchors(text)
		anchorsOf[rel] = a
		return a
	}
	checked := 0
	for page, text := range pages {
		for _, target := range markdownLinks(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			rel := page
			if file != "" {
				rel = path.Join(path.Dir(page), file)
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s links to %s, outside the repository", page, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("%s links to %s: %s does not exist", page, target, rel)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(rel, ".md") && !anchors(rel)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", page, target, rel, anchor)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d links: the pattern no longer finds them", checked)
	}
}

// markdownLinks are the targets of a page's inline links and images
// ("[text](target)", "![alt](target)") outside fenced code blocks.
func markdownLinks(page string) []string {
	link := regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	var out []string
	for _, line := range proseLines(page) {
		line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "``")
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// proseLines are a page's lines outside fenced code blocks.
func proseLines(page string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence == "":
			out = append(out, line)
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a page's headings, and any
// <a id="..."> or <a name="..."> of its own.
func headingAnchors(page string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	html := regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkText := regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	out := map[string]bool{}
	count := map[string]int{}
	for _, line := range proseLines(page) {
		for _, m := range html.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := linkText.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := count[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		count[slug]++
	}
	return out
}

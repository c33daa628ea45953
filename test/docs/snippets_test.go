package docs_test

import (
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// TestGoSnippets: every ```go block of README.md, CONTRIBUTING.md,
// SECURITY.md and docs/*.md says, in an HTML comment on the line before it
// (invisible on GitHub and on the site), either where it is compiled —
// "<!-- compiled: FILE FUNC -->", FUNC a function of FILE, an
// example_test.go that go vet and go test compile, whose body the block
// is — or why it is not: "<!-- not compiled: REASON -->". Both sides are
// compared gofmt'd (the page may put "if err != nil { return err }" on one
// line) and without the example's //nolint comments.
func TestGoSnippets(t *testing.T) {
	compiled := 0
	for page, text := range allDocs(t) {
		for _, b := range goBlocks(text) {
			switch {
			case b.file != "":
				compiled++
				body := funcBody(t, read(t, b.file), b.fn)
				if got, want := normalizeGo(t, page, b.code), normalizeGo(t, b.file, body); got != want {
					t.Errorf("%s's Go block on line %d is not %s's %s; the page shows:\n%s\nthe function (gofmt'd):\n%s", page, b.line, b.file, b.fn, got, want)
				}
			case len(strings.Fields(b.reason)) < 3:
				t.Errorf("%s's Go block on line %d has no <!-- compiled: FILE FUNC --> or <!-- not compiled: REASON --> comment before it", page, b.line)
			}
		}
	}
	if compiled < 5 {
		t.Fatalf("%d Go blocks are compiled: the pattern no longer finds them", compiled)
	}
}

// block is one ```go block of a page and the comment before it.
type block struct {
	line     int // of the opening fence, from 1
	code     string
	file, fn string // from "<!-- compiled: FILE FUNC -->"
	reason   string // from "<!-- not compiled: REASON -->"
}

// goBlocks are a page's ```go blocks.
func goBlocks(page string) []block {
	compiled := regexp.MustCompile(`^<!-- compiled: (\S+) (\w+) -->$`)
	notCompiled := regexp.MustCompile(`^<!-- not compiled: (.+) -->$`)
	lines := strings.Split(page, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		b := block{line: i + 1}
		if i > 0 {
			prev := strings.TrimSpace(lines[i-1])
			if m := compiled.FindStringSubmatch(prev); m != nil {
				b.file, b.fn = m[1], m[2]
			} else if m := notCompiled.FindStringSubmatch(prev); m != nil {
				b.reason = m[1]
			}
		}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		b.code = strings.Join(code, "\n")
		out = append(out, b)
	}
	return out
}

// funcBody is the source between the braces of function name in src.
func funcBody(t *testing.T, src, name string) string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name && fn.Body != nil {
			return src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
		}
	}
	t.Fatalf("no function %s", name)
	return ""
}

// normalizeGo is body gofmt'd inside a function, without //nolint
// comments, trailing blanks or blank lines at its ends.
func normalizeGo(t *testing.T, where, body string) string {
	t.Helper()
	body = strings.TrimSpace(regexp.MustCompile(`[ \t]*//nolint:[^\n]*`).ReplaceAllString(body, ""))
	out, err := format.Source([]byte("package p\n\nfunc f() error {\n" + body + "\n}\n"))
	if err != nil {
		t.Fatalf("%s: the Go snippet does not parse: %v", where, err)
	}
	return strings.TrimSpace(string(out))
}

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

// TestGoSnippets: a Go snippet a page shows is the body of a function in
// an example_test.go file, which go vet and go test compile, so the
// snippet compiles as shown. Both are compared gofmt'd (the page may put
// "if err != nil { return err }" on one line) and without the example's
// //nolint comments.
func TestGoSnippets(t *testing.T) {
	for _, c := range []struct {
		page, marker, file, fn string
	}{
		{"README.md", "kube.NewLocker(", "pkg/kube/example_test.go", "quickStart"},
		{"docs/library.md", "lock.New(client", "pkg/lock/example_test.go", "goService"},
	} {
		snippet := goBlock(t, read(t, c.page), c.marker)
		body := funcBody(t, read(t, c.file), c.fn)
		if got, want := normalizeGo(t, c.page, snippet), normalizeGo(t, c.file, body); got != want {
			t.Errorf("%s's Go snippet with %s is not %s's %s; the page shows:\n%s\nthe example (gofmt'd):\n%s", c.page, c.marker, c.file, c.fn, got, want)
		}
	}
}

// goBlock is the one ```go block of page that contains marker.
func goBlock(t *testing.T, page, marker string) string {
	t.Helper()
	var found []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], marker) {
			found = append(found, m[1])
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ```go blocks contain %q, want 1", len(found), marker)
	}
	return found[0]
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

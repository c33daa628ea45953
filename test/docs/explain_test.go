package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/kubetest"
)

// TestSchemaDescriptionsNameNoGoCode: what `kubectl explain` shows (the CRDs'
// descriptions) is written for its readers, who do not read the Go code: no
// Go function or method of the API or library packages ("see EffectiveKey"),
// no qualified Go name ("lock.Locker"), no Go file ("conditions.go"), and a
// Go type only where a description starts with it, as Kubernetes' own do
// ("PodSpec is ..."). The API's own values (condition types, reasons,
// enums) are words users meet, and so are plain words that happen to be a
// method's name ("Inline"): only a CamelCase or qualified name counts.
func TestSchemaDescriptionsNameNoGoCode(t *testing.T) {
	funcs, types, values := goNames(t, "api/v1alpha1", "pkg/lock", "pkg/kube")
	if len(funcs) < 20 || len(types) < 10 || len(values) < 30 {
		t.Fatalf("found %d functions, %d types, %d API values: the scan no longer works", len(funcs), len(types), len(values))
	}
	codeLike := func(d string, at int, w string) bool {
		if values[w] || kinds[w] {
			return false
		}
		return (at > 0 && d[at-1] == '.') || len(regexp.MustCompile(`[A-Z]`).FindAllString(w, -1)) >= 2
	}
	goFile := regexp.MustCompile(`\b\w+\.go\b`)
	word := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "config/crd/bases/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	checked := 0
	for _, f := range files {
		for path, d := range descriptions(t, f) {
			checked++
			if m := goFile.FindString(d); m != "" {
				t.Errorf("%s %s: names the Go file %s", filepath.Base(f), path, m)
			}
			for i, loc := range word.FindAllStringIndex(d, -1) {
				w := d[loc[0]:loc[1]]
				switch {
				case !codeLike(d, loc[0], w):
				case funcs[w] && !types[w]:
					t.Errorf("%s %s: names the Go function %s", filepath.Base(f), path, w)
				case types[w] && i > 0:
					t.Errorf("%s %s: names the Go type %s", filepath.Base(f), path, w)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d descriptions: the walk no longer finds them", checked)
	}
}

// kinds are Go types that are also the API's kinds: names users know.
var kinds = map[string]bool{"DistributedLock": true, "LockStore": true, "ClusterLockStore": true}

// goNames are the exported functions and methods, the exported types, and
// the string constants' values of the packages under dirs.
func goNames(t *testing.T, dirs ...string) (funcs, types, values map[string]bool) {
	t.Helper()
	funcs, types, values = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(repoRoot(t), dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			addNames(file, funcs, types, values)
		}
	}
	return funcs, types, values
}

// addNames adds file's exported functions and methods, exported types and
// string constants' values.
func addNames(file *ast.File, funcs, types, values map[string]bool) {
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				funcs[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						types[s.Name.Name] = true
					}
				case *ast.ValueSpec:
					for _, v := range s.Values {
						if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							values[strings.Trim(lit.Value, "`\"")] = true
						}
					}
				}
			}
		}
	}
}

// descriptions are the description fields of a CRD file, by their path.
func descriptions(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file) //nolint:gosec // G304: a CRD of this repository
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(n any, path string)
	walk = func(n any, path string) {
		switch v := n.(type) {
		case map[string]any:
			if d, ok := v["description"].(string); ok {
				out[path] = d
			}
			for k, c := range v {
				walk(c, path+"."+k)
			}
		case []any:
			for _, c := range v {
				walk(c, path+"[]")
			}
		}
	}
	walk(doc, "")
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

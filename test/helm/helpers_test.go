// Package helm_test checks the Helm chart in charts/redlease by rendering it
// with bin/helm (`helm template`) for several value sets and asserting on the
// parsed objects: kinds present, the restricted security context, probes,
// manager arguments, RBAC (identical to the generated rules, cluster-wide or
// per namespace), the CRD (identical to the generated one), monitoring, and
// the values schema's refusals.
package helm_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	release   = "redlease"
	namespace = "redlease-system"
)

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// repoRoot is the directory holding go.mod, found by walking up from the
// test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("no go.mod above the test's directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatalf("locating the repository root: %v", rootErr)
	}
	return rootDir
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "charts", "redlease") }

// helmBin is <root>/bin/helm; a missing binary fails the test (never skips).
func helmBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found (%v): run `make tools` (or hack/install-tools.sh helm) to build it from source", bin, err)
	}
	return bin
}

// helmTemplate runs `helm template redlease <chart> -n redlease-system args...`
// and returns stdout, or an error carrying stderr.
func helmTemplate(t *testing.T, chart string, args ...string) (string, error) {
	t.Helper()
	return helmTemplateRelease(t, release, chart, args...)
}

func helmTemplateRelease(t *testing.T, name, chart string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helmBin(t), append([]string{"template", name, chart, "--namespace", namespace}, args...)...) //nolint:gosec // G204: bin/helm, built from source by make tools
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm template %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// manifest is the parsed output of one `helm template`.
type manifest struct {
	t    *testing.T
	args []string
	objs []*unstructured.Unstructured
}

// render renders the chart with args (e.g. --set k=v) and parses every
// document; rendering or parsing errors fail the test.
func render(t *testing.T, args ...string) *manifest {
	t.Helper()
	return renderRelease(t, release, args...)
}

// renderRelease is render with another release name.
func renderRelease(t *testing.T, name string, args ...string) *manifest {
	t.Helper()
	out, err := helmTemplateRelease(t, name, chartDir(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseDocs(out)
	if err != nil {
		t.Fatalf("parsing the output of helm template %v: %v", args, err)
	}
	return &manifest{t: t, args: args, objs: objs}
}

func parseDocs(s string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		if len(m) == 0 { // comments only
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("a document without apiVersion, kind or name:\n%s", doc)
		}
		objs = append(objs, u)
	}
}

// ofKind lists the objects of a kind.
func (m *manifest) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object of kind, namespace and name, or nil.
func (m *manifest) find(kind, ns, name string) *unstructured.Unstructured {
	for _, o := range m.objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

// must is find that fails the test when the object is missing.
func (m *manifest) must(kind, ns, name string) *unstructured.Unstructured {
	m.t.Helper()
	if o := m.find(kind, ns, name); o != nil {
		return o
	}
	m.t.Fatalf("values %v: no %s %s/%s in the output; have %v", m.args, kind, ns, name, m.names())
	return nil
}

func (m *manifest) names() []string {
	var out []string
	for _, o := range m.objs {
		n := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			n = o.GetKind() + " " + ns + "/" + o.GetName()
		}
		out = append(out, n)
	}
	return out
}

func (m *manifest) kinds() []string {
	var out []string
	for _, o := range m.objs {
		if !slices.Contains(out, o.GetKind()) {
			out = append(out, o.GetKind())
		}
	}
	slices.Sort(out)
	return out
}

// isHook reports whether the object is a Helm hook (created by helm test,
// helm install... at their moment, not a release object).
func isHook(o *unstructured.Unstructured) bool {
	_, ok := o.GetAnnotations()["helm.sh/hook"]
	return ok
}

// into converts an object into a typed one, refusing unknown fields (a
// misspelled or misplaced field in a template fails here).
func into[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s does not convert to %T: %v", u.GetKind(), u.GetName(), out, err)
	}
	return out
}

// readFile is os.ReadFile for the only files these tests read: this
// repository's and their own copies in t.TempDir().
func readFile(path string) ([]byte, error) {
	return os.ReadFile(path) //nolint:gosec // G304: only this repository's files and the tests' own temporary copies
}

// readYAML parses a file of the repository (relative to its root).
func readYAML(t *testing.T, rel string) map[string]any {
	t.Helper()
	data, err := readFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

// normalize round-trips v through JSON so that values parsed from different
// sources compare with reflect.DeepEqual (numbers, empty maps).
func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// chartAppVersion is appVersion from Chart.yaml.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	v, _ := readYAML(t, "charts/redlease/Chart.yaml")["appVersion"].(string)
	if v == "" {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return v
}

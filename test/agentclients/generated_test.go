package agentclients_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The Node example's generated code (examples/agent/node/gen) is what buf
// and the pinned protoc-gen-es make of api/proto today: regenerated into a
// scratch directory and compared file by file.
func TestTheNodeExampleGeneratedCodeIsCurrent(t *testing.T) {
	dir := installedNodeExample(t) // for node_modules/.bin/protoc-gen-es
	buf := filepath.Join(root, "bin", "buf")
	if _, err := os.Stat(buf); err != nil {
		t.Fatalf("%s: run `make tools-gen` (hack/install-tools.sh proto)", buf)
	}
	out := t.TempDir()
	gen := program(t.Context(), buf, "generate", filepath.Join(root, "api", "proto"), "--template", "buf.gen.yaml", "--output", out)
	gen.Dir = dir
	if msg, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("buf generate: %v\n%s", err, msg)
	}
	want := files(t, filepath.Join(out, "gen"))
	have := files(t, filepath.Join(root, "examples", "agent", "node", "gen"))
	if len(want) == 0 {
		t.Fatal("buf generated nothing")
	}
	for _, name := range union(want, have) {
		if !bytes.Equal(want[name], have[name]) {
			t.Errorf("examples/agent/node/gen/%s is not what buf generates: run `npm ci && npm run generate` in examples/agent/node and commit", name)
		}
	}
}

// files maps each file under dir, by its path relative to dir, to its
// content.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)], err = os.ReadFile(p) //nolint:gosec // G304: generated files of the repository and of the test's own directory
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func union(a, b map[string][]byte) []string {
	var names []string
	for _, m := range []map[string][]byte{a, b} {
		for name := range m {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

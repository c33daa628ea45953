package agentclients_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// nodeInstall is one installed copy of a Node example.
type nodeInstall struct {
	once sync.Once
	dir  string
	err  error
}

var nodeInstalls = map[string]*nodeInstall{"node": {}, "dapr": {}}

// installedNodeExample is a copy of examples/agent/node with its
// dependencies installed: see installedExample.
func installedNodeExample(t *testing.T) string { return installedExample(t, "node") }

// installedExample is a copy of examples/agent/NAME with its dependencies
// installed by `npm ci` from package-lock.json (from npm's cache when it
// has them), made once for every test that runs it. A copy, so that the
// tests leave no node_modules in the repository.
func installedExample(t *testing.T, name string) string {
	t.Helper()
	needNode(t)
	in := nodeInstalls[name]
	in.once.Do(func() {
		dir := filepath.Join(scratch, name+"-example")
		if err := copyExample(filepath.Join(root, "examples", "agent", name), dir); err != nil {
			in.err = err
			return
		}
		npm := program(t.Context(), "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
		npm.Dir = dir
		var out bytes.Buffer
		npm.Stdout, npm.Stderr = &out, &out
		if err := npm.Run(); err != nil {
			in.err = fmt.Errorf("npm ci in a copy of examples/agent/%s: %w\n%s", name, err, out.String())
			return
		}
		in.dir = dir
	})
	if in.err != nil {
		t.Fatal(in.err)
	}
	return in.dir
}

// copyExample copies the example's files, not a node_modules an earlier
// `npm install` left in the repository.
func copyExample(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && d.Name() == "node_modules":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o750)
		}
		data, err := os.ReadFile(p) //nolint:gosec // G304: a file of the repository's example
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o600) //nolint:gosec // G703: rel is a path under the repository's example, written under the test's own directory
	})
}

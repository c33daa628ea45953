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

var nodeInstall struct {
	once sync.Once
	dir  string
	err  error
}

// installedNodeExample is a copy of examples/agent/node with its
// dependencies installed by `npm ci` from package-lock.json (from npm's
// cache when it has them), made once for every test that runs it. A copy,
// so that the tests leave no node_modules in the repository.
func installedNodeExample(t *testing.T) string {
	t.Helper()
	needNode(t)
	nodeInstall.once.Do(func() {
		dir := filepath.Join(scratch, "node-example")
		if err := copyExample(filepath.Join(root, "examples", "agent", "node"), dir); err != nil {
			nodeInstall.err = err
			return
		}
		npm := program(t.Context(), "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
		npm.Dir = dir
		var out bytes.Buffer
		npm.Stdout, npm.Stderr = &out, &out
		if err := npm.Run(); err != nil {
			nodeInstall.err = fmt.Errorf("npm ci in a copy of examples/agent/node: %w\n%s", err, out.String())
			return
		}
		nodeInstall.dir = dir
	})
	if nodeInstall.err != nil {
		t.Fatal(nodeInstall.err)
	}
	return nodeInstall.dir
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

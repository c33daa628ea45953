// Package agentclients_test runs the lock agent's client examples
// (examples/agent) as their users would: shell with curl, Python with its
// standard library and Node with @connectrpc/connect-node, each a real
// process against a real `lockctl agent` on a real Redis, sharing one lock
// and one fenced ledger; and the documented fenced SQL against a real
// PostgreSQL.
//
// The tools the examples need (node and npm, python3, curl, psql) are not
// optional: a test whose tool is missing fails and says what to install, so
// that a skipped example never looks like a passing one.
package agentclients_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var (
	// root is the repository: go test runs a package's tests in its
	// directory, two levels below.
	root string
	// scratch holds what TestMain builds and the Node example's installed
	// copy; removed after the tests.
	scratch string
	// lockctlBinary is lockctl built from cmd/lockctl: the tests run the
	// real agent.
	lockctlBinary string
)

func TestMain(m *testing.M) {
	code, err := setUpAndRun(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func setUpAndRun(m *testing.M) (int, error) {
	var err error
	if root, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		return 0, err
	}
	if scratch, err = os.MkdirTemp("", "agentclients-"); err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(scratch) }() // a temporary directory: leaving it behind fails nothing
	lockctlBinary = filepath.Join(scratch, "lockctl")
	build := program(context.Background(), "go", "build", "-o", lockctlBinary, "github.com/redlease/redlease/cmd/lockctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("building lockctl: %w", err)
	}
	return m.Run(), nil
}

// program is the one place these tests start a process: the go tool,
// lockctl, the examples and the tools that run them (node, npm, python3,
// bash, buf, psql).
func program(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: the go tool, the lockctl binary TestMain built, and the repository's examples with their interpreters
}

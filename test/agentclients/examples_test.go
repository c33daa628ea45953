package agentclients_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// example is one client example: how to run it on a lock and a ledger for
// n iterations, each run a process of its own.
type example struct {
	name    string
	command func(t *testing.T, lock, ledger string, n int) *exec.Cmd
}

// The three examples of examples/agent, in the order the docs show them.
var (
	shellExample = example{"curl/ledger.sh", func(t *testing.T, lock, ledger string, n int) *exec.Cmd {
		need(t, "bash", "curl")
		return program(t.Context(), "bash", filepath.Join(root, "examples", "agent", "curl", "ledger.sh"), lock, ledger, strconv.Itoa(n))
	}}
	pythonExample = example{"python/ledger.py", func(t *testing.T, lock, ledger string, n int) *exec.Cmd {
		need(t, "python3")
		return program(t.Context(), "python3", filepath.Join(root, "examples", "agent", "python", "ledger.py"), lock, ledger, strconv.Itoa(n))
	}}
	nodeExample = example{"node/ledger.js", func(t *testing.T, lock, ledger string, n int) *exec.Cmd {
		cmd := program(t.Context(), "node", "ledger.js", lock, ledger, strconv.Itoa(n))
		cmd.Dir = installedNodeExample(t)
		return cmd
	}}
	examples = []example{shellExample, pythonExample, nodeExample}
)

// prepare makes the example ready to run against a's socket (the Node
// example's npm ci included), with env added to the test's; start runs it.
func (e example) prepare(t *testing.T, a *agent, lock, ledger string, n int, env ...string) func() *process {
	t.Helper()
	cmd := e.command(t, lock, ledger, n)
	cmd.Env = append(append(os.Environ(), "REDLEASE_AGENT_SOCKET="+a.socket), env...)
	return func() *process {
		t.Helper()
		return start(t, e.name, cmd)
	}
}

// run starts the example at once.
func (e example) run(t *testing.T, a *agent, lock, ledger string, n int, env ...string) *process {
	t.Helper()
	return e.prepare(t, a, lock, ledger, n, env...)()
}

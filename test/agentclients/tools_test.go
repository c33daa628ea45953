package agentclients_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// installHint says where each tool the examples run comes from.
var installHint = map[string]string{
	"node":    "Node.js 20 or later (Debian: apt-get install nodejs npm)",
	"npm":     "npm (Debian: apt-get install npm)",
	"python3": "Python 3 (Debian: apt-get install python3)",
	"curl":    "curl 7.76 or later, for --fail-with-body (Debian: apt-get install curl)",
	"bash":    "bash",
}

// need fails t when a tool is not on PATH, saying what to install.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH: the agent's client examples need %s", tool, installHint[tool])
		}
	}
}

// needNode fails t unless node and npm are on PATH and node is 20 or later:
// @connectrpc/connect-node 2.1 runs on Node 20 (package.json's engines).
func needNode(t *testing.T) {
	t.Helper()
	need(t, "node", "npm")
	out, err := program(t.Context(), "node", "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	m := regexp.MustCompile(`^v(\d+)\.`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("node --version printed %q", out)
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 20 {
		t.Fatalf("node %s: the Node example needs %s", out, installHint["node"])
	}
}

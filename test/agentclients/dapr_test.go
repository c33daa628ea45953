package agentclients_test

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeLoopbackPort is a port nothing listens on now (the agent takes it
// next; another process taking it first would fail the test, not pass it).
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // freed for the agent
	return port
}

// Dapr's own JavaScript SDK (@dapr/dapr), pointed at the agent as its Dapr
// HTTP port, takes and gives back a lock through Dapr's lock API and gets
// Dapr's answers: the app (examples/agent/dapr) knows nothing of redlease.
func TestDaprsJavaScriptSDKTakesALockFromTheAgent(t *testing.T) {
	dir := installedExample(t, "dapr")
	port := strconv.Itoa(freeLoopbackPort(t))
	a := startAgent(t, 30*time.Second, "--listen", "127.0.0.1:"+port, "--dapr-store", "lockstore")
	node := program(t.Context(), "node", "app.js", "report")
	node.Dir = dir
	node.Env = append(node.Environ(), "DAPR_HTTP_PORT="+port)
	var out, errb bytes.Buffer
	node.Stdout, node.Stderr = &out, &errb
	if err := node.Run(); err != nil {
		t.Fatalf("node app.js: %v\n%s%s", err, out.String(), errb.String())
	}
	want := map[string]string{
		"lock a": `{"success":true}`, "lock b": `{"success":false}`,
		"unlock b": `{"status":2}`, "unlock a": `{"status":0}`, "unlock a again": `{"status":1}`,
		"lock b after": `{"success":true}`, "unlock b after": `{"status":0}`,
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var step struct {
			Step   string          `json:"step"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &step) == nil && step.Step != "" {
			got[step.Step] = string(step.Result)
		}
	}
	for step, w := range want {
		if got[step] != w {
			t.Errorf("%s: %s, want Dapr's answer %s", step, got[step], w)
		}
	}
	if n := a.redis.Client(t).Exists(t.Context(), "report").Val(); n != 0 {
		t.Fatal("the lock is still held after the app unlocked it")
	}
}

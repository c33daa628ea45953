package agentclients_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// agent is a running `lockctl agent --redis` and its Redis.
type agent struct {
	socket string
	redis  *redistest.Server
}

// startAgent starts a Redis and an agent on it whose leases have ttl, with
// extra flags; both stop when t ends.
func startAgent(t *testing.T, ttl time.Duration, extra ...string) *agent {
	t.Helper()
	srv := redistest.StartStandalone(t)
	// Not t.TempDir(): a socket's path must fit in 108 bytes, and the
	// test's name is part of that one.
	dir, err := os.MkdirTemp("", "agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // a temporary directory: leaving it behind fails nothing
	a := &agent{socket: filepath.Join(dir, "agent.sock"), redis: srv}
	logPath := filepath.Join(t.TempDir(), "agent.log")
	logf, err := os.Create(logPath) //nolint:gosec // G304: a log in the test's own temporary directory
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	cmd := program(ctx, lockctlBinary, append([]string{"agent", "--redis", "redis://" + srv.Addr(), "--socket", a.socket, "--ttl", ttl.String()}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Stopped as in a pod: SIGTERM, which ends the streams and releases.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		// Wait reports the cancellation even when SIGTERM made the agent
		// exit 0, as it should: its exit status is what counts.
		if err := cmd.Wait(); err != nil && !cmd.ProcessState.Success() {
			log, _ := os.ReadFile(logPath) //nolint:gosec // G304: the agent's log in the test's own temporary directory
			t.Errorf("lockctl agent: %v; its log:\n%s", err, log)
		}
		_ = logf.Close() // our copy of the agent's stdout/stderr, read through its path
	})
	a.waitServing(t, logPath)
	return a
}

// waitServing waits until the agent answers on its socket.
func (a *agent) waitServing(t *testing.T, logPath string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", a.socket)
	}}}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://agent/livez", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close() // a probe: the status is all it says
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath) //nolint:gosec // G304: the agent's log in the test's own temporary directory
			t.Fatalf("the agent did not serve on %s within 30s; its log:\n%s", a.socket, log)
		}
	}
}

// hold takes key in Redis with the library, as a Go pod beside the agent's
// clients would; the lease is released when t ends unless released before.
func (a *agent) hold(t *testing.T, key string) *lock.Lease {
	t.Helper()
	lease, err := locktest.New(t, a.redis.Client(t), lock.WithTTL(10*time.Second)).TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, lease)
	return lease
}

// waitForWaiters waits until n clients wait in key's line.
func (a *agent) waitForWaiters(t *testing.T, key string, n int) {
	t.Helper()
	inspector := locktest.New(t, a.redis.Client(t))
	locktest.WaitFor(t, 30*time.Second, "clients waiting in the line", func() bool {
		h, err := inspector.Inspect(t.Context(), key)
		return err == nil && h.Waiting != nil && h.Waiting.Count >= n
	})
}

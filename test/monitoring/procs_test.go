package monitoring_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
)

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "monitoring-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
	os.Exit(code)
}

// managerBinary builds cmd/manager once per test binary.
var managerBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "manager")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./cmd/manager") //nolint:gosec // G204: the go tool, building this repository
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: out}
	}
	return bin, nil
})

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "building the manager: " + e.err.Error() + "\n" + string(e.out)
}

// manager is a manager process the test started.
type manager struct {
	cmd     *exec.Cmd
	metrics string // its /metrics URL
	log     *bytes.Buffer
	mu      *sync.Mutex
}

// startManager runs the manager binary against kubeconfig with plain-HTTP
// metrics on a loopback port, a 1 s probe interval, and extra flags; it is
// stopped when t ends.
func startManager(t *testing.T, kubeconfig string, extra ...string) *manager {
	t.Helper()
	bin, err := managerBinary()
	if err != nil {
		t.Fatal(err)
	}
	addr := redistest.FreeAddr(t)
	args := append([]string{"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--probe-interval=1s"}, extra...)
	// Not t.Context(): the cleanup below stops it first.
	cmd := exec.CommandContext(context.Background(), bin, args...) //nolint:gosec // G204: this repository's manager, built above
	m := &manager{cmd: cmd, metrics: "http://" + addr + "/metrics", log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = lockedWriter{m.mu, m.log}, lockedWriter{m.mu, m.log}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			m.mu.Lock()
			t.Logf("manager log:\n%s", m.log.String())
			m.mu.Unlock()
		}
	})
	return m
}

// stop SIGTERMs the manager and waits for it (SIGKILL after 10 s); a
// second call does nothing.
func (m *manager) stop() {
	if m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

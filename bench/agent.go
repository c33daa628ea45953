package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
)

// The lock agent (`lockctl agent`, docs/agent.md) measured as its clients
// see it: a separate process on a Unix socket, as in a pod, never the
// agent package in this process, whose Go calls would skip the socket,
// HTTP and the encoding that every other language pays for.

// LockctlEnv names a lockctl binary to run the agent from; unset, Lockctl
// builds one from the root module.
const LockctlEnv = "REDLEASE_LOCKCTL"

// Lockctl returns the lockctl binary: $REDLEASE_LOCKCTL, else one built
// from the root module (this module replaces it with the work tree, so the
// agent is the tree's), which it then names in $REDLEASE_LOCKCTL so that
// worker processes run the same binary without building it again.
func Lockctl(ctx context.Context) (string, error) {
	if p := os.Getenv(LockctlEnv); p != "" {
		return exec.LookPath(p)
	}
	p, err := buildLockctl(ctx)
	if err != nil {
		return "", err
	}
	return p, os.Setenv(LockctlEnv, p)
}

// buildLockctl builds cmd/lockctl of the root module into the user's cache
// directory: one path for every run, so that nothing is left behind in
// /tmp, written under a temporary name and renamed so that a concurrent
// run never executes a half-written file.
func buildLockctl(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/redlease/redlease").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("bench: finding the root module (run from bench/, or set %s): %w %s", LockctlEnv, err, bytes.TrimSpace(stderr))
	}
	root := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "redlease", "bench")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "lockctl-*")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	build := exec.CommandContext(ctx, "go", "build", "-o", tmp.Name(), "./cmd/lockctl") //nolint:gosec // G204: go build of this repository's own command
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("bench: building lockctl in %s: %w\n%s", root, err, b)
	}
	bin := filepath.Join(dir, "lockctl")
	return bin, os.Rename(tmp.Name(), bin)
}

// Agent is a `lockctl agent --redis` process serving on a Unix socket in a
// directory of its own. Close stops it.
type Agent struct {
	Socket string

	cmd  *exec.Cmd
	dir  string
	out  *lockedWriter
	done chan struct{}
	once sync.Once
}

// StartAgent runs lockctl's agent against the Redis at addr with args
// added (e.g. --ttl) and waits until its socket answers. The agent runs on
// the CPUs of this process (it inherits them, as a worker process does).
func StartAgent(lockctl, addr string, args ...string) (*Agent, error) {
	dir, err := os.MkdirTemp("", "redlease-bench-agent-")
	if err != nil {
		return nil, err
	}
	a := &Agent{Socket: filepath.Join(dir, "agent.sock"), dir: dir, out: &lockedWriter{}, done: make(chan struct{})}
	argv := append([]string{"agent", "--redis", "redis://" + addr, "--socket", a.Socket}, args...)
	a.cmd = exec.Command(lockctl, argv...) //nolint:gosec,noctx // G204: the lockctl this benchmark built or was given; noctx: Close stops it (SIGTERM, then SIGKILL)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	a.cmd.SysProcAttr = sysProcAttr()
	if err := a.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
		return nil, err
	}
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	if err := a.waitReady(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// PID is the agent's process id, for /proc.
func (a *Agent) PID() int { return a.cmd.Process.Pid }

// waitReady dials the socket until it answers, for up to 10 seconds.
func (a *Agent) waitReady() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-a.done:
			return fmt.Errorf("bench: lockctl agent exited at start: %s", strings.TrimSpace(a.output()))
		default:
		}
		var d net.Dialer
		if c, err := d.DialContext(context.Background(), "unix", a.Socket); err == nil {
			_ = c.Close() // only the dial mattered
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: lockctl agent did not listen within 10s: %s", strings.TrimSpace(a.output()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *Agent) output() string {
	a.out.mu.Lock()
	defer a.out.mu.Unlock()
	return a.out.w.String()
}

// Close stops the agent as a pod stops it (SIGTERM: it releases what it
// holds), SIGKILL after 10s, and removes its directory. Safe to call more
// than once.
func (a *Agent) Close() {
	a.once.Do(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.done
		}
		_ = os.RemoveAll(a.dir) // a temporary directory: leaving it behind fails nothing
	})
}

// Protocol is how a client speaks to the agent.
type Protocol int

const (
	// GRPC is gRPC over HTTP/2 without TLS: one connection, every call a
	// stream on it.
	GRPC Protocol = iota
	// JSON is Connect's HTTP/JSON over HTTP/1.1, as curl and the Python
	// example send it: a connection per call in flight.
	JSON
)

func (p Protocol) String() string {
	if p == GRPC {
		return "gRPC"
	}
	return "HTTP/JSON"
}

// Client is a Connect client of the agent speaking p.
func (a *Agent) Client(p Protocol) lockv1connect.LockServiceClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.Socket)
		},
		// HTTP/1.1 keeps 2 idle connections by default: 16 goroutines
		// would dial for most calls. As many as go-redis's pool here.
		MaxIdleConnsPerHost: 64,
	}
	opts := []connect.ClientOption{connect.WithProtoJSON()}
	if p == GRPC {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		opts = []connect.ClientOption{connect.WithGRPC()}
	}
	return lockv1connect.NewLockServiceClient(&http.Client{Transport: tr}, "http://agent", opts...)
}

// errNotGranted is a stream whose first message was not the grant.
var errNotGranted = errors.New("agent: the stream's first message is not a grant")

// cpu is the agent's CPU time so far, 0 when /proc cannot say.
func (a *Agent) cpu() time.Duration {
	d, _ := ProcCPU(a.PID()) // 0 reads as "not measured" in the report
	return d
}

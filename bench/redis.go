package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a throwaway redis-server bound to 127.0.0.1 on a free port, with
// persistence off. Close it to kill the process and remove its directory.
type Server struct {
	Addr string
	// Socket is the server's Unix socket: the hop floor (HopFloor) reaches
	// the server over it, as an agent's clients reach the agent.
	Socket string

	cmd  *exec.Cmd
	dir  string
	out  *lockedWriter // stdout+stderr, for errors
	done chan struct{} // closed once the process has been reaped
	once sync.Once
}

// ServerEnv names the server binary to benchmark (a path to a
// redis-server, or Valkey's); unset, the redis-server on PATH.
const ServerEnv = "REDLEASE_REDIS_SERVER"

// ServerCPUsEnv names a CPU list (taskset -c's: "1", "0-1,3"); when it is
// set, StartServer runs every redis-server on those CPUs through taskset:
// the runner's -pin puts the server and the clients on CPUs of their own.
const ServerCPUsEnv = "REDLEASE_BENCH_SERVER_CPUS"

// ServerBinary is the redis-server StartServer runs: $REDLEASE_REDIS_SERVER,
// else redis-server from PATH.
func ServerBinary() (string, error) {
	name := "redis-server"
	if v := os.Getenv(ServerEnv); v != "" {
		name = v
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("bench: %s not found (set %s to a redis-server, or make redis installs Debian's): %w", name, ServerEnv, err)
	}
	return bin, nil
}

// StartServer starts a redis-server (ServerBinary) and waits until it
// answers PING. A start that loses its port to another process is retried
// on a new port.
func StartServer() (*Server, error) {
	bin, err := ServerBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		s, err := startOnce(bin)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOnce(bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redlease-bench-redis-")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Socket: filepath.Join(dir, "redis.sock"), dir: dir, out: &lockedWriter{}, done: make(chan struct{})}
	argv, err := pinned(os.Getenv(ServerCPUsEnv), bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--unixsocket", s.Socket,
		"--unixsocketperm", "700",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--loglevel", "warning",
	)
	if err != nil {
		_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
		return nil, err
	}
	s.cmd = exec.Command(argv[0], argv[1:]...) //nolint:gosec,noctx // G204: redis-server from PATH (through taskset when pinned), which the benchmark exists to start; noctx: Close stops it (SIGTERM, then SIGKILL)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// pinned is the command line that runs bin with args on cpus (taskset -c;
// taskset execs bin, so the pid stays the server's), or bin itself when
// cpus is empty.
func pinned(cpus, bin string, args ...string) ([]string, error) {
	if cpus == "" {
		return append([]string{bin}, args...), nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("bench: %s=%s needs taskset (util-linux): %w", ServerCPUsEnv, cpus, err)
	}
	return append([]string{taskset, "-c", cpus, bin}, args...), nil
}

// CPUs is the list of CPUs the server may run on (Cpus_allowed_list), ""
// when unknown.
func (s *Server) CPUs() string { return AllowedCPUs(strconv.Itoa(s.cmd.Process.Pid)) }

// AllowedCPUs reads the CPUs a process may run on ("0-1") from
// /proc/<pid>/status; pid "self" is this process. "" when unknown.
func AllowedCPUs(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/status") //nolint:gosec // G304: a /proc status file, of this process or a server it started
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// waitReady polls PING (and checks the pid, so a server that someone else
// started on the same port does not pass for ours) for up to 10 seconds.
func (s *Server) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer func() { _ = c.Close() }()
	want := strconv.Itoa(s.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("bench: redis-server on %s exited at start: %s", s.Addr, strings.TrimSpace(s.output()))
		default:
		}
		dialer := net.Dialer{Timeout: time.Second}
		if conn, err := dialer.DialContext(context.Background(), "tcp", s.Addr); err == nil {
			_ = conn.Close() // only the dial mattered
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := s.info(ctx, c, "server")
			cancel()
			if err == nil && info["process_id"] == want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: redis-server on %s did not answer within 10s: %s", s.Addr, strings.TrimSpace(s.output()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a new go-redis client for the server. Every library in a
// comparison gets a client built with the same options.
func (s *Server) Client(poolSize int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: poolSize})
}

// Info returns the INFO sections as a map.
func (s *Server) Info(ctx context.Context, c *redis.Client, sections ...string) (map[string]string, error) {
	return s.info(ctx, c, sections...)
}

func (s *Server) info(ctx context.Context, c *redis.Client, sections ...string) (map[string]string, error) {
	text, err := c.Info(ctx, sections...).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			m[k] = v
		}
	}
	return m, nil
}

// Close kills the server (SIGTERM, then SIGKILL after 3s), waits for it and
// removes its directory. Safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(3 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		_ = os.RemoveAll(s.dir) // a temporary directory: leaving it behind fails nothing
	})
}

func (s *Server) output() string {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return s.out.w.String()
}

// StartServers starts n independent servers (Redlock nodes); on error the
// ones already started are closed.
func StartServers(n int) ([]*Server, error) {
	var out []*Server
	for range n {
		s, err := StartServer()
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// freePort returns a loopback port nothing listens on right now.
func freePort() (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

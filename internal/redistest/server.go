package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startAttempts bounds the retries on a new port when another process took
// the chosen one before the server could bind it.
const startAttempts = 5

// readyTimeout is how long a started server gets to answer.
const readyTimeout = 10 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Server is one redis-server or redis-sentinel process on 127.0.0.1. Its
// port, config and directory stay the same across Kill and Start, so a test
// can take a node down and bring it back as the same member of its topology.
type Server struct {
	binary   string // "redis-server" or "redis-sentinel"
	port     int
	password string // what clients must send; empty for Sentinels
	home     string // config and logs, kept by RestartEmpty
	dataDir  string // RDB and AOF files, wiped by RestartEmpty
	caPEM    []byte // WithTLS: the CA the server's certificate chains to

	// program is the executable to run when not binary from PATH, env
	// what the process gets added to the test's environment, and
	// clockOffset (under mu) the wall-clock offset libfaketime reads from
	// clockFile (StartWithSteppableClock; all empty otherwise).
	program     string
	env         []string
	clockFile   string
	clockOffset time.Duration

	mu   sync.Mutex // serialises lifecycle changes and guards proc
	proc *process   // latest run; nil before the first start
}

// launch creates a server in a fresh temp dir, picks a free port, writes the
// config from conf and starts it, failing t if it does not answer. setup
// adjusts the server before its first start. The server is killed in
// t.Cleanup; if the test failed, its log tail is logged first.
func launch(t testing.TB, binary, password string, bus bool, conf func(*Server) ([]string, error), setup ...func(*Server)) *Server {
	t.Helper()
	s, err := launchIn(t.TempDir(), binary, password, bus, conf, func(s *Server) {
		for _, f := range setup {
			f(s)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("redistest: %s log tail:\n%s", s, s.logTail())
			}
			s.Kill()
		})
	})
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// StartForMain starts one standalone redis-server outside any test, for a
// TestMain whose runnable examples need a server before a *testing.T exists.
// Call stop after m.Run returns; it kills the server and removes its files.
func StartForMain(opts ...Option) (s *Server, stop func(), err error) {
	if missing := missingBinaries(); len(missing) > 0 {
		return nil, nil, fmt.Errorf("redistest: %s not on PATH: run `make test` or hack/install-redis.sh", strings.Join(missing, ", "))
	}
	home, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, nil, err
	}
	cfg := newConfig(opts)
	s, err = launchIn(home, "redis-server", cfg.password, false, func(s *Server) ([]string, error) {
		return dataConf(s, cfg)
	}, func(*Server) {})
	if err != nil {
		_ = os.RemoveAll(home)
		return nil, nil, err
	}
	return s, func() { s.Kill(); _ = os.RemoveAll(home) }, nil
}

// launchIn is launch without a test: onCreate registers the server's
// cleanup before it starts, so a failed start is cleaned up too.
func launchIn(home, binary, password string, bus bool, conf func(*Server) ([]string, error), onCreate func(*Server)) (*Server, error) {
	s := &Server{binary: binary, password: password, home: home, dataDir: filepath.Join(home, "data")}
	if err := os.Mkdir(s.dataDir, 0o750); err != nil {
		return nil, err
	}
	onCreate(s)
	var err error
	for range startAttempts {
		if s.port, err = freePort(bus); err != nil {
			break
		}
		var lines []string
		if lines, err = conf(s); err != nil {
			break
		}
		if err = writeConf(s.confPath(), lines); err != nil {
			break
		}
		// A fresh log per attempt, so the tail shows this attempt only.
		_ = os.Remove(s.logPath())
		_ = os.Remove(s.consolePath())
		if err = s.Start(); !errors.Is(err, errPortInUse) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	return s, nil
}

func (s *Server) confPath() string    { return filepath.Join(s.home, s.binary+".conf") }
func (s *Server) logPath() string     { return filepath.Join(s.home, s.binary+".log") }
func (s *Server) consolePath() string { return filepath.Join(s.home, "console.log") }

// String names the server in messages.
func (s *Server) String() string { return s.binary + " " + s.Addr() }

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port is the TCP port, the same for the server's whole life.
func (s *Server) Port() int { return s.port }

// PID is the process id of the latest start; it changes on every restart and
// stays readable after Kill (0 only if the server never started).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.pid()
}

// Alive reports whether the process is running (a paused one is).
func (s *Server) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// Client returns a new client for this server, sending its password, closed
// in t.Cleanup. opts adjust the options before the client is made, e.g. a
// short ReadTimeout.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.Addr(), Password: s.password, TLSConfig: s.TLSConfig()}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start starts the server again on the same port with the same config. It
// gets back the data it had only if persistence was enabled (WithConfig
// "--appendonly yes" survives Kill, "--save" survives Stop); a replica goes on
// replicating its master, a cluster node rejoins. It fails if the server is
// running or does not answer within 10 s, quoting its log.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked()
}

func (s *Server) startLocked() error {
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("redistest: %s is already running (pid %d)", s, s.proc.pid())
	}
	program := s.binary
	if s.program != "" {
		program = s.program
	}
	p, err := spawn(program, s.env, s.confPath(), s.home, s.consolePath())
	if err != nil {
		return fmt.Errorf("redistest: starting %s: %w", s, err)
	}
	s.proc = p
	if err := s.waitReady(p); err != nil {
		p.kill()
		return err
	}
	return nil
}

// Kill ends the server with SIGKILL (continuing it first if paused) and reaps
// it: a crash, losing whatever was not persisted. Killing a dead server does
// nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
	}
}

// Stop asks the server to shut down with SIGTERM, as an orderly restart
// would (Redis then saves if "save" is configured), and uses SIGKILL if it
// has not exited after 5 s. It returns once the process is reaped.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.kill()
	}
}

// Pause freezes the server with SIGSTOP: it keeps its connections but
// answers nothing, like a process stalled by the OS or a long GC.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.signal(sig)
	}
}

// RestartEmpty kills the server, deletes everything in its data directory
// and starts it again on the same port: a node that lost its disk. Config and
// cluster identity (nodes.conf) are kept, so it rejoins as the same member,
// empty; a replica then resyncs, and replicas of an emptied master follow it
// into emptiness.
func (s *Server) RestartEmpty() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		return err
	}
	if err := os.Mkdir(s.dataDir, 0o750); err != nil {
		return err
	}
	return s.startLocked()
}

// Promote turns the server into a master (REPLICAOF NO ONE), as an operator
// or a failover would, without telling anybody else. Like a bare REPLICAOF in
// production it is not written to the config file, so a later Start brings
// back the configured role.
func (s *Server) Promote(ctx context.Context) error {
	c := s.adminClient()
	defer func() { _ = c.Close() }()
	return c.ReplicaOf(ctx, "NO", "ONE").Err()
}

// Info returns the fields of INFO for the given sections (all default ones
// if none), e.g. Info(ctx, "replication")["role"].
func (s *Server) Info(ctx context.Context, sections ...string) (map[string]string, error) {
	c := s.adminClient()
	defer func() { _ = c.Close() }()
	text, err := c.Info(ctx, sections...).Result()
	if err != nil {
		return nil, err
	}
	return parseInfo(text), nil
}

// adminClient is a short-lived client for the harness's own commands. It
// fails fast instead of retrying, because the harness polls anyway and a
// server it talks to may be down on purpose.
func (s *Server) adminClient() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:          s.Addr(),
		Password:      s.password,
		TLSConfig:     s.TLSConfig(),
		DialTimeout:   time.Second,
		ReadTimeout:   2 * time.Second,
		WriteTimeout:  2 * time.Second,
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      1,
	})
}

// parseInfo turns INFO's "field:value" lines into a map.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

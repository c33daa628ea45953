package redistest

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartStandalone(t *testing.T) {
	t.Parallel()
	s := StartStandalone(t)
	ctx := t.Context()

	if want := "127.0.0.1:" + strconv.Itoa(s.Port()); s.Addr() != want {
		t.Errorf("Addr() = %q, want %q", s.Addr(), want)
	}
	if !s.Alive() || s.PID() <= 0 {
		t.Fatalf("Alive() = %v, PID() = %d after start", s.Alive(), s.PID())
	}
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
	// The server that answered is the process we started, on loopback only.
	info, err := s.Info(ctx, "server")
	if err != nil {
		t.Fatal(err)
	}
	if info["process_id"] != strconv.Itoa(s.PID()) || info["tcp_port"] != strconv.Itoa(s.Port()) {
		t.Errorf("INFO process_id %s tcp_port %s, want %d %d", info["process_id"], info["tcp_port"], s.PID(), s.Port())
	}
	if bind, err := c.ConfigGet(ctx, "bind").Result(); err != nil || bind["bind"] != "127.0.0.1" {
		t.Errorf("CONFIG GET bind = %v, %v; want 127.0.0.1", bind, err)
	}
}

func TestStartNodesAreIndependent(t *testing.T) {
	t.Parallel()
	const n = 3
	nodes := StartNodes(t, n)
	ctx := t.Context()
	if len(nodes) != n {
		t.Fatalf("got %d nodes, want %d", len(nodes), n)
	}
	ports := map[int]bool{}
	for i, s := range nodes {
		ports[s.Port()] = true
		if err := s.Client(t).Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("%s: SET: %v", s, err)
		}
	}
	if len(ports) != n {
		t.Errorf("nodes share ports: %v", ports)
	}
	// Each node kept its own value: nothing replicates between them.
	for i, s := range nodes {
		if got, err := s.Client(t).Get(ctx, "k").Int(); err != nil || got != i {
			t.Errorf("%s: GET k = %d, %v; want %d", s, got, err, i)
		}
		info, err := s.Info(ctx, "replication")
		if err != nil {
			t.Fatal(err)
		}
		if info["role"] != "master" || info["connected_slaves"] != "0" {
			t.Errorf("%s: role %s, connected_slaves %s; want an unconnected master", s, info["role"], info["connected_slaves"])
		}
	}
}

func TestKillStopAndStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []Option
		down     func(*Server)
		wantKept bool
	}{
		{name: "kill without persistence comes back empty", down: (*Server).Kill},
		{
			name:     "kill with appendfsync always keeps data",
			opts:     []Option{WithConfig("--appendonly", "yes", "--appendfsync", "always")},
			down:     (*Server).Kill,
			wantKept: true,
		},
		{name: "stop without persistence comes back empty", down: (*Server).Stop},
		{
			name:     "stop with save points saves on shutdown",
			opts:     []Option{WithConfig("--save", "3600", "1")},
			down:     (*Server).Stop,
			wantKept: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := StartStandalone(t, tc.opts...)
			ctx := t.Context()
			if err := s.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			pid, port := s.PID(), s.Port()

			tc.down(s)
			if s.Alive() {
				t.Fatal("Alive() after going down")
			}
			tc.down(s) // a second call must be harmless
			var dialer net.Dialer
			if conn, err := dialer.DialContext(ctx, "tcp", s.Addr()); err == nil {
				_ = conn.Close()
				t.Fatal("the port still accepts connections after going down")
			}

			if err := s.Start(); err != nil {
				t.Fatalf("Start: %v", err)
			}
			if !s.Alive() || s.PID() == pid || s.Port() != port {
				t.Fatalf("after Start: Alive %v, PID %d (was %d), port %d (was %d)", s.Alive(), s.PID(), pid, s.Port(), port)
			}
			got, err := s.Client(t).Get(ctx, "k").Result()
			switch {
			case tc.wantKept && (err != nil || got != "v"):
				t.Errorf("GET k = %q, %v; want v kept", got, err)
			case !tc.wantKept && !errors.Is(err, redis.Nil):
				t.Errorf("GET k = %q, %v; want the key gone", got, err)
			}
			if err := s.Start(); err == nil {
				t.Error("Start on a running server succeeded")
			}
		})
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := StartStandalone(t)
	ctx := t.Context()
	c := s.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.WriteTimeout = 200 * time.Millisecond
		o.MaxRetries = -1
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	s.Pause()
	start := time.Now()
	err := c.Get(ctx, "k").Err()
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("GET while paused: %v; want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("GET while paused took %v; the 200ms read timeout should have ended it", d)
	}
	if !s.Alive() {
		t.Error("Alive() = false while paused")
	}

	s.Resume()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want v", got, err)
	}
}

func TestRestartEmpty(t *testing.T) {
	t.Parallel()
	// appendfsync always: a plain Start would bring the key back, so its
	// absence proves the data was wiped.
	s := StartStandalone(t, WithConfig("--appendonly", "yes", "--appendfsync", "always"))
	ctx := t.Context()
	if err := s.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	pid, port := s.PID(), s.Port()

	if err := s.RestartEmpty(); err != nil {
		t.Fatalf("RestartEmpty: %v", err)
	}
	if s.Port() != port || s.PID() == pid || !s.Alive() {
		t.Fatalf("after RestartEmpty: port %d (was %d), PID %d (was %d), Alive %v", s.Port(), port, s.PID(), pid, s.Alive())
	}
	c := s.Client(t)
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE = %d, %v; want 0", n, err)
	}
	// Same config as before: only the data is gone.
	if got, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || got["appendonly"] != "yes" {
		t.Errorf("CONFIG GET appendonly = %v, %v; want yes", got, err)
	}
}

func TestPromote(t *testing.T) {
	t.Parallel()
	r := StartReplicated(t, 1)
	ctx := t.Context()
	replica := r.Replicas[0]
	c := replica.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Fatal("a replica accepted a write before Promote")
	}

	if err := replica.Promote(ctx); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	info, err := replica.Info(ctx, "replication")
	if err != nil {
		t.Fatal(err)
	}
	if info["role"] != "master" {
		t.Fatalf("role after Promote = %q, want master", info["role"])
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on the promoted server: %v", err)
	}
}

// TestStartReportsPortInUse checks the detection launch relies on to retry
// on a new port when another process binds the chosen one first.
func TestStartReportsPortInUse(t *testing.T) {
	t.Parallel()
	RequireBinaries(t)
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	// Hang up on every connection, so the harness is not kept waiting by a
	// port that accepts but never answers.
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close() // hanging up is the point
		}
	}()
	home := t.TempDir()
	s := &Server{binary: "redis-server", port: l.Addr().(*net.TCPAddr).Port, home: home, dataDir: home}
	t.Cleanup(s.Kill)
	lines, err := dataConf(s, config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConf(s.confPath(), lines); err != nil {
		t.Fatal(err)
	}

	err = s.Start()
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("Start on a taken port: %v; want errPortInUse", err)
	}
	if s.Alive() {
		t.Error("the server runs although it could not bind")
	}
}

func TestTLS(t *testing.T) {
	srv := StartStandalone(t, WithTLS())
	ctx := t.Context()
	if err := srv.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer func() { _ = plain.Close() }()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("a plain-text client got an answer from a TLS-only server")
	}
	if len(srv.CACertPEM()) == 0 || srv.TLSConfig().ServerName != TLSServerName {
		t.Fatal("no CA or server name for clients")
	}
}

package redistest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  []Option
		check func(ctx context.Context, t *testing.T, s *Server)
	}{
		{
			name: "WithPassword refuses unauthenticated clients",
			opts: []Option{WithPassword("s3cret")},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				err := s.Client(t, func(o *redis.Options) { o.Password = "" }).Get(ctx, "k").Err()
				if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
					t.Errorf("GET without password: %v; want NOAUTH", err)
				}
				err = s.Client(t, func(o *redis.Options) { o.Password = "wrong" }).Get(ctx, "k").Err()
				if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
					t.Errorf("GET with a wrong password: %v; want WRONGPASS", err)
				}
				if err := s.Client(t).Ping(ctx).Err(); err != nil {
					t.Errorf("PING with the password: %v", err)
				}
			},
		},
		{
			name: "WithConfig sets a directive",
			opts: []Option{WithConfig("--maxmemory-policy", "allkeys-lru")},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				wantConfig(ctx, t, s, "maxmemory-policy", "allkeys-lru")
			},
		},
		{
			name: "WithConfig calls accumulate and override defaults",
			opts: []Option{WithConfig("--maxmemory", "10mb"), WithConfig("--appendonly", "yes")},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				wantConfig(ctx, t, s, "maxmemory", "10485760")
				wantConfig(ctx, t, s, "appendonly", "yes")
			},
		},
		{
			name: "WithConfig rename-command to empty disables the command",
			opts: []Option{WithConfig("--rename-command", "CONFIG", `""`)},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				err := s.Client(t).ConfigGet(ctx, "maxmemory").Err()
				if err == nil || !strings.Contains(err.Error(), "unknown command") {
					t.Errorf("CONFIG GET: %v; want unknown command", err)
				}
			},
		},
		{
			name: "WithAdminForbidden disables CONFIG, ACL, DEBUG and MONITOR, not the rest",
			opts: []Option{WithDebugCommand(), WithAdminForbidden()},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				c := s.Client(t)
				for _, cmd := range [][]any{{"CONFIG", "GET", "maxmemory"}, {"ACL", "WHOAMI"}, {"DEBUG", "SLEEP", "0"}, {"MONITOR"}} {
					if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "unknown command") {
						t.Errorf("%v: %v; want unknown command", cmd, err)
					}
				}
				if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
					t.Errorf("SET: %v", err)
				}
				if err := c.Info(ctx, "memory").Err(); err != nil {
					t.Errorf("INFO: %v", err)
				}
			},
		},
		{
			name: "WithDebugCommand enables DEBUG",
			opts: []Option{WithDebugCommand()},
			check: func(ctx context.Context, t *testing.T, s *Server) {
				if err := s.Client(t).Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
					t.Errorf("DEBUG SLEEP 0: %v", err)
				}
			},
		},
		{
			name: "DEBUG is off by default",
			check: func(ctx context.Context, t *testing.T, s *Server) {
				err := s.Client(t).Do(ctx, "DEBUG", "SLEEP", "0").Err()
				if err == nil || !strings.Contains(err.Error(), "DEBUG command not allowed") {
					t.Errorf("DEBUG SLEEP 0: %v; want it refused", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := StartStandalone(t, tc.opts...)
			tc.check(t.Context(), t, s)
		})
	}
}

func wantConfig(ctx context.Context, t *testing.T, s *Server, name, want string) {
	t.Helper()
	if got, err := s.Client(t).ConfigGet(ctx, name).Result(); err != nil || got[name] != want {
		t.Errorf("CONFIG GET %s = %v, %v; want %s", name, got, err, want)
	}
}

func TestExtraConf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		want    []string
		wantErr bool
	}{
		{args: []string{"--maxmemory-policy", "allkeys-lru"}, want: []string{"maxmemory-policy allkeys-lru"}},
		{args: []string{"--save", "3600", "1", "--appendonly", "yes"}, want: []string{"save 3600 1", "appendonly yes"}},
		{args: []string{"--rename-command", "CONFIG", `""`}, want: []string{`rename-command CONFIG ""`}},
		{args: []string{"--rename-command", "CONFIG", ""}, want: []string{`rename-command CONFIG ""`}},
		{args: []string{"allkeys-lru"}, wantErr: true},
	}
	for _, tc := range tests {
		got, err := extraConf(tc.args)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("extraConf(%q) = %q, %v; want %q (error %v)", tc.args, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for _, bus := range []bool{false, false, true, true} {
		port, err := freePort(bus)
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Errorf("freePort handed out %d twice", port)
		}
		seen[port] = true
		// Whether the ports are still free is not checked here: any
		// process on the machine (another test package's connection, whose
		// ephemeral local port this can be) may take one at any moment,
		// which is why a server that fails to bind is started again on new
		// ports. freePort checked them when it handed them out.
		if bus {
			if port >= maxClusterPort {
				t.Errorf("cluster port %d is not below %d", port, maxClusterPort)
			}
			if seen[port+clusterBusOffset] {
				t.Errorf("bus port %d was handed out as a port too", port+clusterBusOffset)
			}
			seen[port+clusterBusOffset] = true
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

func TestRequireBinaries(t *testing.T) {
	found := &fatalRecorder{TB: t}
	RequireBinaries(found)
	if found.msg != "" {
		t.Fatalf("RequireBinaries failed with the binaries installed: %s", found.msg)
	}

	t.Setenv("PATH", t.TempDir())
	missing := &fatalRecorder{TB: t}
	RequireBinaries(missing)
	for _, want := range []string{"redis-server", "redis-sentinel", "redis-cli", "make test", "hack/install-redis.sh"} {
		if !strings.Contains(missing.msg, want) {
			t.Errorf("failure message %q does not mention %q", missing.msg, want)
		}
	}
}

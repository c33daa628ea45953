package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}} {
		if got := Percentile(d, tc.q); got != tc.want {
			t.Errorf("Percentile(1..100, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	if l := Summarize([]time.Duration{3, 1, 2}); l.P50 != 2 || l.Max != 3 || l.Mean != 2 || l.N != 3 {
		t.Errorf("Summarize = %+v", l)
	}
}

// TestScenariosSmoke runs every library through each scenario for a moment
// against a real redis-server: the adapters work and mutual exclusion holds.
func TestScenariosSmoke(t *testing.T) {
	srv := singleServer(t)
	ctx := context.Background()
	newClient := func() *redis.Client { return clients(t, srv)()[0] }

	libs, err := UncontendedLibs(newClient, benchTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(libs)
	for _, lib := range libs {
		r, err := Uncontended(ctx, lib, 2, 30*time.Millisecond, keyName("smoke:u:", lib.Name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 {
			t.Errorf("%s: no cycle completed", lib.Name)
		}
	}

	hl, err := HandoffLibs(newClient, benchTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(hl)
	for i, lib := range hl {
		r, err := Contended(ctx, lib, 3, time.Millisecond, 5*time.Second, 12, keyName("smoke:h:", i))
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops != 12 || r.Overlaps != 0 || r.Errors != 0 {
			t.Errorf("%s: ops %d (want 12), overlaps %d, errors %d", lib.Name, r.Ops, r.Overlaps, r.Errors)
		}
	}

	for _, h := range []func() (*Holder, error){
		func() (*Holder, error) {
			return NewRedleaseHolder(newClient(), 300*time.Millisecond, 100*time.Millisecond)
		},
		func() (*Holder, error) {
			return NewRedsyncHolder(newClient(), 300*time.Millisecond, 100*time.Millisecond), nil
		},
		func() (*Holder, error) {
			return NewRedislockHolder(newClient(), 300*time.Millisecond, 100*time.Millisecond), nil
		},
	} {
		hd, err := h()
		if err != nil {
			t.Fatal(err)
		}
		admin := newClient()
		r, err := Held(ctx, srv, admin, hd, 50, 300*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond, keyName("smoke:held:", hd.Name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Lost != 0 || r.Scripts == 0 {
			t.Errorf("%s: lost %d, renewal scripts %d", hd.Name, r.Lost, r.Scripts)
		}
	}
}

// TestStartServerRunsTheNamedBinary: REDLEASE_REDIS_SERVER picks the
// server binary; a name that is not there fails, naming the variable,
// instead of silently benchmarking the redis-server on PATH.
func TestStartServerRunsTheNamedBinary(t *testing.T) {
	onPath, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ServerEnv, onPath)
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	t.Setenv(ServerEnv, filepath.Join(t.TempDir(), "redis-server"))
	if s, err := StartServer(); err == nil || !strings.Contains(err.Error(), ServerEnv) {
		if s != nil {
			s.Close()
		}
		t.Errorf("StartServer with a missing binary: %v, want an error naming %s", err, ServerEnv)
	}
}

package bench

import (
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
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

func TestParseCommandStats(t *testing.T) {
	for _, tc := range []struct {
		name string
		info map[string]string
		want CommandStats
	}{
		{"calls and usec", map[string]string{"cmdstat_evalsha": "calls=12,usec=34,usec_per_call=2.83,rejected_calls=0,failed_calls=0"},
			CommandStats{"evalsha": {12, 34}}},
		{"subcommands fold into their command", map[string]string{"cmdstat_config|resetstat": "calls=1,usec=5", "cmdstat_config|get": "calls=2,usec=7"},
			CommandStats{"config": {3, 12}}},
		{"other INFO fields are not commands", map[string]string{"total_commands_processed": "99", "used_cpu_sys": "1.5"},
			CommandStats{}},
		{"an unreadable field counts as zero", map[string]string{"cmdstat_get": "calls=x,usec=4"},
			CommandStats{"get": {0, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCommandStats(tc.info); !maps.Equal(got, tc.want) {
				t.Errorf("ParseCommandStats = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCommandStatsSubAndCalls(t *testing.T) {
	later := CommandStats{"evalsha": {10, 40}, "fcall": {3, 9}, "set": {5, 5}}
	earlier := CommandStats{"evalsha": {4, 16}, "set": {5, 5}}
	got := later.Sub(earlier)
	if want := (CommandStats{"evalsha": {6, 24}, "fcall": {3, 9}, "set": {0, 0}}); !maps.Equal(got, want) {
		t.Errorf("Sub = %v, want %v", got, want)
	}
	if n := got.Calls("evalsha", "eval", "fcall"); n != 9 {
		t.Errorf("Calls(evalsha, eval, fcall) = %d, want 9", n)
	}
	if sum := earlier.Add(got); !maps.Equal(sum, later) {
		t.Errorf("earlier + (later − earlier) = %v, want %v", sum, later)
	}
}

// TestSentMicros: only the calls clients sent count, so a command a script
// ran is not charged twice (its time is in the script's).
func TestSentMicros(t *testing.T) {
	// The raw floor's cycle, 100 times: a bare SET, and a script that runs
	// GET and DEL; and the runner's own INFO.
	stats := CommandStats{"set": {100, 150}, "evalsha": {100, 250}, "get": {100, 40}, "del": {100, 60}, "info": {2, 80}}
	for _, tc := range []struct {
		name  string
		stats CommandStats
		sent  Counts
		want  float64
	}{
		{"a bare command and a script; what the script ran and the INFO are left out", stats, Counts{"set": 100, "evalsha": 100}, 400},
		{"nothing sent counts nothing", stats, nil, 0},
		{"a command sent bare and run by scripts is prorated by calls", CommandStats{"set": {200, 400}, "evalsha": {100, 500}}, Counts{"set": 100, "evalsha": 100}, 700},
		{"more sent than the server counted (a call cut off) is all of it", CommandStats{"evalsha": {99, 300}}, Counts{"evalsha": 100}, 300},
		{"a command the server never ran", CommandStats{}, Counts{"fcall": 3}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.stats.SentMicros(tc.sent); got != tc.want {
				t.Errorf("SentMicros = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	a, b := Counts{"set": 3, "evalsha": 1}, Counts{"evalsha": 2, "fcall": 1}
	if got, want := a.Add(b), (Counts{"set": 3, "evalsha": 3, "fcall": 1}); !maps.Equal(got, want) {
		t.Errorf("Add = %v, want %v", got, want)
	}
	if got, want := a.Add(b).Sub(a), (Counts{"set": 0, "evalsha": 2, "fcall": 1}); !maps.Equal(got, want) {
		t.Errorf("Sub = %v, want %v", got, want)
	}
	if got := Counts(nil).Add(nil); len(got) != 0 {
		t.Errorf("nil + nil = %v, want empty", got)
	}
}

func TestFenceKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"lock", "{lock}:fence"},
		{"uncontended:fenced-floor:1:0", "{uncontended:fenced-floor:1:0}:fence"},
		{"{orders}:lock", "{orders}:lock:fence"}, // the key's own tag applies to both
		{"a{}b", "{a{}b}:fence"},                 // an empty tag is no tag
		{"a}b{c", "{a}b{c}:fence"},
	} {
		if got := fenceKey(tc.key); got != tc.want {
			t.Errorf("fenceKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestPinnedCommandLine(t *testing.T) {
	if got, err := pinned("", "/usr/bin/redis-server", "--port", "1"); err != nil || !slices.Equal(got, []string{"/usr/bin/redis-server", "--port", "1"}) {
		t.Errorf("pinned(no CPUs) = %q, %v", got, err)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset on this machine")
	}
	if got, err := pinned("1", "/usr/bin/redis-server", "--port", "1"); err != nil || !slices.Equal(got, []string{taskset, "-c", "1", "/usr/bin/redis-server", "--port", "1"}) {
		t.Errorf("pinned(1) = %q, %v", got, err)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/bench"
)

func TestParsePin(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    pinning
		pinned  bool
		wantErr bool
	}{
		{"", pinning{}, false, false},
		{"0/1", pinning{"0", "1"}, true, false},
		{"0/0", pinning{"0", "0"}, true, false},
		{"0-1,3/2", pinning{"0-1,3", "2"}, true, false},
		{"0", pinning{}, false, true},
		{"0/", pinning{}, false, true},
		{"a/1", pinning{}, false, true},
		{"0 /1", pinning{}, false, true},
	} {
		got, pinned, err := parsePin(tc.in)
		if got != tc.want || pinned != tc.pinned || (err != nil) != tc.wantErr {
			t.Errorf("parsePin(%q) = %+v, %v, %v; want %+v, %v, error %v", tc.in, got, pinned, err, tc.want, tc.pinned, tc.wantErr)
		}
	}
}

// latencyRow is a row of an uncontended table with p50 and, per cycle,
// server command time us.
func latencyRow(name, family string, p50 time.Duration, us int64) row {
	const ops = 100
	return row{Name: name, Family: family, Level: 1, Lat: bench.Latency{N: ops, P50: p50},
		Run:  bench.Run{Ops: ops, Wall: time.Second},
		Load: bench.Load{Stats: bench.CommandStats{"evalsha": {Calls: ops, Usec: us * ops}}, Sent: bench.Counts{"evalsha": ops}}}
}

// TestEveryRowIsDividedByBothFloors: the uncontended table and headlines
// give each row's p50 ÷ the raw floor and ÷ the fenced floor, and its
// server command time; a scenario without a fenced floor says so ("—").
func TestEveryRowIsDividedByBothFloors(t *testing.T) {
	rows := []row{
		latencyRow("raw floor", bench.FamilyFloor, 50*time.Microsecond, 3),
		latencyRow("fenced floor", bench.FamilyFencedFloor, 60*time.Microsecond, 5),
		latencyRow("redlease", bench.FamilyRedlease, 66*time.Microsecond, 8),
		latencyRow("redislock", bench.FamilyRedislock, 55*time.Microsecond, 4),
	}
	for _, tc := range []struct {
		name string
		rows []row
		want []string
	}{
		{"both floors", rows, []string{
			"| 1 | redlease | 66 µs | — | 100 | 0.0 | — | 8.0 µs | 1.32× | 1.10× | 1.20× |",
			"| 1 | redislock | 55 µs | — | 100 | 0.0 | — | 4.0 µs | 1.10× | 0.92× | 1.00× |",
			"| 1 | fenced floor | 60 µs | — | 100 | 0.0 | — | 5.0 µs | 1.20× | 1.00× |",
		}},
		{"no fenced floor (Redlock)", []row{rows[0], rows[2], rows[3]}, []string{
			"| 1 | redlease | 66 µs | — | 100 | 0.0 | — | 8.0 µs | 1.32× | — | 1.20× |",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeLatencyTable(&b, tc.rows, "goroutines")
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("table has no line starting %q:\n%s", w, b.String())
				}
			}
		})
	}
	var b strings.Builder
	writeUncontendedHeadlines(&b, rows)
	if want := "redlease p50 66 µs = 1.32× the raw floor, 1.10× the fenced floor and 1.20× the best peer (redislock)"; !strings.Contains(b.String(), want) {
		t.Errorf("headline lacks %q:\n%s", want, b.String())
	}
	if want := "server command time 8.0 µs per cycle (+3.0 µs over the fenced floor's)"; !strings.Contains(b.String(), want) {
		t.Errorf("headline lacks %q:\n%s", want, b.String())
	}
}

func TestPinLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    machine
		s    settings
		want string
	}{
		{"-pin", machine{Cores: 1, Online: 2, ClientCPUs: "0", ServerCPUs: "1"}, settings{pin: "0/1"}, "Pinned with `-pin 0/1` (taskset): this run and its worker processes on CPU 0, redis-server on CPU 1"},
		{"taskset around the runner", machine{Cores: 1, Online: 2}, settings{}, "Pinned: this run, its worker processes and redis-server ran on 1 of the machine's 2 CPUs"},
		{"not pinned", machine{Cores: 2, Online: 2, ClientCPUs: "0-1"}, settings{}, "Not pinned"},
	} {
		if got := pinLine(tc.m, tc.s); !strings.Contains(got, tc.want) {
			t.Errorf("%s: pinLine = %q, want it to contain %q", tc.name, got, tc.want)
		}
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/bench"
)

// familyRow is a lock family row at level with p50, and sent commands
// sent per cycle over 100 cycles in a second.
func familyRow(name, family string, level int, p50 time.Duration, sent int64) row {
	const ops = 100
	return row{Name: name, Family: family, Level: level, Lat: bench.Latency{N: ops, P50: p50},
		Run: bench.Run{Ops: ops, Wall: time.Second}, Load: bench.Load{Sent: bench.Counts{"evalsha": sent * ops}}}
}

// TestFamilyReport: the shared hold is read against the exclusive lock,
// each multi-key row against redlease one by one and the best peer at its
// number of keys ("—" where the reference row is missing), and the
// writer's row gives its waits, the reads per second and the commands
// per acquisition, reads and writes together.
func TestFamilyReport(t *testing.T) {
	writer := row{Name: "redlease", Family: bench.FamilyRedlease, Level: 2,
		Lat: bench.Latency{N: 3, P50: 2 * time.Millisecond, P99: 4 * time.Millisecond, Max: 5 * time.Millisecond},
		Run: bench.Run{Ops: 103, Wall: time.Second, PerWorker: []int{40, 60, 3}}, Load: bench.Load{Sent: bench.Counts{"evalsha": 206}}}
	res := &results{family: familyResults{
		shared: []row{
			familyRow(bench.ExclusiveName, bench.FamilyRedlease, 1, 100*time.Microsecond, 2),
			familyRow(bench.SharedName, bench.FamilyRedlease, 1, 112*time.Microsecond, 2),
		},
		keys: []row{
			familyRow(bench.AllName, bench.FamilyRedlease, 2, 140*time.Microsecond, 2),
			familyRow(bench.OneByOneName, bench.FamilyRedlease, 2, 200*time.Microsecond, 4),
			familyRow("redislock one by one", bench.FamilyRedislock, 2, 175*time.Microsecond, 4),
			familyRow("redsync one by one", bench.FamilyRedsync, 2, 250*time.Microsecond, 4),
			familyRow(bench.AllName, bench.FamilyRedlease, 8, 300*time.Microsecond, 2),
		},
		writer: []row{writer},
	}}
	var report, headlines strings.Builder
	writeFamily(&report, res)
	writeFamilyHeadlines(&headlines, res.family)
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"shared ÷ exclusive", report.String(), "| 1 | redlease (shared) | 112 µs | — | 100 | 2.0 | 0.0 | — | 1.12× |"},
		{"the exclusive row is its own reference", report.String(), "| 1 | redlease (exclusive) | 100 µs | — | 100 | 2.0 | 0.0 | — | 1.00× |"},
		{"all ÷ one by one and ÷ best peer", report.String(), "| 2 | redlease TryAcquireAll | 140 µs | — | 100 | 2.0 | 0.0 | — | 0.70× | 0.80× |"},
		{"a peer row ÷ one by one", report.String(), "| 2 | redsync one by one | 250 µs | — | 100 | 4.0 | 0.0 | — | 1.25× | 1.43× |"},
		{"no reference rows", report.String(), "| 8 | redlease TryAcquireAll | 300 µs | — | 100 | 2.0 | 0.0 | — | — | — |"},
		{"best peer", report.String(), "Best peer at 2 keys: p50 175 µs (redislock one by one)."},
		{"writer among readers", report.String(), "| 2 | redlease | 2.00 ms | 4.00 ms | 5.00 ms | 3 | 100 | 2.0 | 0.0 | — |"},
		{"shared headline", headlines.String(), "a shared hold's p50 112 µs = 1.12× the exclusive lock's 100 µs (goal ≤ 1.1×); 2.0 commands sent per cycle against 2.0."},
		{"keys headline", headlines.String(), "2 keys: TryAcquireAll p50 140 µs = 0.70× redlease one by one (200 µs) and 0.80× the best peer one by one (redislock one by one, 175 µs); 2.0 commands sent per cycle against 4.0 one by one."},
		{"writer headline", headlines.String(), "a writer among 2 readers: the writer waited 2.00 ms p50, 4.00 ms p99; the readers made 100 reads/s."},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("%s: no %q in:\n%s", tc.name, tc.want, tc.got)
		}
	}
	if strings.Contains(headlines.String(), "8 keys") {
		t.Errorf("a headline for 8 keys, which have no one-by-one row:\n%s", headlines.String())
	}
}

// TestFamilySectionOnlyWhenRun: a run without the scenario has no section.
func TestFamilySectionOnlyWhenRun(t *testing.T) {
	var b strings.Builder
	writeFamily(&b, &results{})
	writeFamilyHeadlines(&b, familyResults{})
	if b.Len() != 0 {
		t.Errorf("family section without the scenario:\n%s", b.String())
	}
}

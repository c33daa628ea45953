package agentclients_test

import (
	"path/filepath"
	"testing"
	"time"
)

// The three examples, each a process in its own language, contend for one
// lock through one agent, each writing 20 times to one fenced ledger: every
// write is accepted (no example ever holds a fence at or below the
// ledger's), the fences strictly increase in the ledger's order, the count
// equals the writes, the writes interleave, and no output carries a lock
// value.
func TestThreeLanguagesShareOneLockAndOneFencedLedger(t *testing.T) {
	const (
		lockName = "ledger"
		n        = 20
	)
	a := startAgent(t, 5*time.Second)
	ledger := filepath.Join(t.TempDir(), "ledger")

	var starts []func() *process
	for _, e := range examples {
		starts = append(starts, e.prepare(t, a, lockName, ledger, n))
	}
	// A Go holder keeps the lock until all three wait in its line: they
	// contend from the first grant on, instead of the fastest to start
	// finishing before the slowest begins.
	gate := a.hold(t, lockName)
	var runs []*process
	for _, begin := range starts {
		runs = append(runs, begin())
	}
	a.waitForWaiters(t, lockName, len(runs))
	if err := gate.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	writer := map[uint64]string{} // fence → the example that wrote with it
	for _, p := range runs {
		p.succeed(t, 3*time.Minute)
		fences := fencesOf(t, p.stdout.String())
		if len(fences) != n {
			t.Errorf("%s printed %d fences, want %d:\n%s", p.name, len(fences), n, p.stdout)
		}
		for _, f := range fences {
			if other, dup := writer[f]; dup {
				t.Errorf("fence %d was granted to %s and %s", f, other, p.name)
			}
			writer[f] = p.name
		}
		for _, out := range []*output{p.stdout, p.stderr} {
			if v := lockValue.FindString(out.String()); v != "" {
				t.Errorf("%s's output carries a lock value (%s):\n%s", p.name, v, out)
			}
		}
	}

	entries := readLedger(t, ledger)
	checkLedger(t, entries)
	if len(entries) != len(runs)*n {
		t.Fatalf("the ledger took %d writes, want %d", len(entries), len(runs)*n)
	}
	checkInterleaved(t, entries, writer)
}

// checkInterleaved fails t unless every write is one an example printed,
// and the examples took turns: three runs one after another would change
// writer twice in the ledger, contending ones change it far more often.
func checkInterleaved(t *testing.T, entries []entry, writer map[uint64]string) {
	t.Helper()
	turns := 0
	for i, e := range entries {
		w, ok := writer[e.fence]
		if !ok {
			t.Fatalf("ledger write %d has fence %d, which no example printed", i+1, e.fence)
		}
		if i > 0 && w != writer[entries[i-1].fence] {
			turns++
		}
	}
	if turns < len(entries)/4 {
		t.Errorf("the writer changed %d times in %d writes: the examples did not contend", turns, len(entries))
	}
	t.Logf("the writer changed %d times in %d writes", turns, len(entries))
}

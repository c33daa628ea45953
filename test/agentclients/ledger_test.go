package agentclients_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// entry is one write the ledger accepted: its line "FENCE COUNT".
type entry struct {
	fence uint64
	count int
}

// readLedger is every write the ledger at path accepted, in its order.
func readLedger(t *testing.T, path string) []entry {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: the ledger in the test's own temporary directory
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f, c, ok := strings.Cut(l, " ")
		fence, err1 := strconv.ParseUint(f, 10, 64)
		count, err2 := strconv.Atoi(c)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("ledger line %q: want FENCE COUNT", l)
		}
		out = append(out, entry{fence, count})
	}
	return out
}

// checkLedger fails t unless the ledger's fences strictly increase in the
// order it accepted them, each write counted one more than the one before.
func checkLedger(t *testing.T, entries []entry) {
	t.Helper()
	for i, e := range entries {
		if e.count != i+1 {
			t.Errorf("ledger write %d has count %d: a write was lost or counted twice", i+1, e.count)
		}
		if i > 0 && e.fence <= entries[i-1].fence {
			t.Errorf("ledger write %d has fence %d after %d: fences must strictly increase", i+1, e.fence, entries[i-1].fence)
		}
	}
}

var fenceLine = regexp.MustCompile(`(?m)^fence (\d+)$`)

// fencesOf are the fences an example printed, one "fence N" line per write.
func fencesOf(t *testing.T, stdout string) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range fenceLine.FindAllStringSubmatch(stdout, -1) {
		f, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			t.Fatalf("fence %q: %v", m[1], err)
		}
		out = append(out, f)
	}
	return out
}

// lockValue is a lock value's token: 40 hex digits (pkg/lock's value is the
// holder's identity, "/", and those). Fences are decimal and lease handles
// 32 hex digits, so neither matches.
var lockValue = regexp.MustCompile(`[0-9a-f]{40}`)

package agentclients_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/pgtest"
)

// The documented fenced SQL for writers in other languages
// (examples/agent/sql/fenced-write.sql), run with psql as the file says, on
// a real PostgreSQL: each statement's result is the one its "-- expect:"
// comment states, a stale or equal fence's write among them affecting no
// row.
func TestTheDocumentedFencedSQLRefusesAStaleFence(t *testing.T) {
	file := filepath.Join(root, "examples", "agent", "sql", "fenced-write.sql")
	text, err := os.ReadFile(file) //nolint:gosec // G304: the repository's example
	if err != nil {
		t.Fatal(err)
	}
	want := expectations(string(text))
	if !slices.Contains(want, "UPDATE 0") || !slices.Contains(want, "UPDATE 1") {
		t.Fatalf("%s expects %q: it must show both an accepted and a refused write", file, want)
	}
	dsn := pgtest.Start(t)
	psql := program(t.Context(), pgtest.Binary(t, "psql"), "-X", "-v", "ON_ERROR_STOP=1", "--no-align", "--tuples-only", "--field-separator", " ", "-d", dsn, "-f", file)
	out, err := psql.CombinedOutput()
	if err != nil {
		t.Fatalf("psql -f %s: %v\n%s", file, err, out)
	}
	if got := results(string(out)); !slices.Equal(got, want) {
		t.Errorf("psql -f %s printed\n%s\nwant the expected results, in order:\n%s", file, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// expectations are the file's "-- expect: RESULT (why)" lines' results.
func expectations(sql string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^-- expect: ([^(\n]*?)\s*(?:\(.*\))?$`).FindAllStringSubmatch(sql, -1) {
		out = append(out, m[1])
	}
	return out
}

// results are psql's lines but those of the set-up (CREATE, PREPARE),
// which the file expects nothing of.
func results(out string) []string {
	var res []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "CREATE TABLE" && l != "PREPARE" {
			res = append(res, l)
		}
	}
	return res
}

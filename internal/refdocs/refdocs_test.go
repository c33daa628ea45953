package refdocs_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/lockctl"
	"github.com/redlease/redlease/internal/refdocs"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path)) //nolint:gosec // G304: a file of the repository, named by the test
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The reference pages are what make manifests writes from the generated
// CRDs and lockctl's code.
func TestReferenceIsCurrent(t *testing.T) {
	var crds [][]byte
	for _, f := range refdocs.CRDFiles {
		crds = append(crds, read(t, "config/crd/bases/"+f))
	}
	crdPage, err := refdocs.CRDs(crds...)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{
		"docs/reference/crds.md":    crdPage,
		"docs/reference/lockctl.md": refdocs.CLI(lockctl.NewCommand(io.Discard, io.Discard)),
	} {
		if !bytes.Equal(read(t, path), want) {
			t.Errorf("%s is stale: run make manifests", path)
		}
	}
}

// Every field of every kind has a row, with its description, and a CEL
// rule's message is there: a sample of what a reader looks for.
func TestCRDReferenceHasTheFields(t *testing.T) {
	page := string(read(t, "docs/reference/crds.md"))
	for _, want := range []string{
		"## DistributedLock", "## LockStore", "## ClusterLockStore",
		"| `spec.ttl` |", "| `spec.storeRef.kind` |", "| `status.conditions[].reason` |", "| `status.waiting.count` |",
		"set exactly one of storeRef",
		"**Waiters**",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("docs/reference/crds.md lacks %q", want)
		}
	}
	cli := string(read(t, "docs/reference/lockctl.md"))
	for _, want := range []string{"## lockctl run", "--metrics-addr", "## lockctl check install", "Flags of every command"} {
		if !strings.Contains(cli, want) {
			t.Errorf("docs/reference/lockctl.md lacks %q", want)
		}
	}
}

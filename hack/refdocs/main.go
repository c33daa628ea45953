// Command refdocs writes the reference pages under docs/reference
// (internal/refdocs): the CRDs from config/crd/bases and lockctl's
// commands from its code. Run by make manifests.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/redlease/redlease/internal/lockctl"
	"github.com/redlease/redlease/internal/refdocs"
)

func main() {
	if err := write(); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func write() error {
	var crds [][]byte
	for _, kind := range refdocs.CRDFiles {
		b, err := os.ReadFile(filepath.Join("config/crd/bases", kind)) //nolint:gosec // G304: a generated CRD of the repository
		if err != nil {
			return err
		}
		crds = append(crds, b)
	}
	page, err := refdocs.CRDs(crds...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll("docs/reference", 0o750); err != nil {
		return err
	}
	if err := os.WriteFile("docs/reference/crds.md", page, 0o644); err != nil { //nolint:gosec // G306: documentation, readable by all
		return err
	}
	return os.WriteFile("docs/reference/lockctl.md", refdocs.CLI(lockctl.NewCommand(io.Discard, io.Discard)), 0o644) //nolint:gosec // G306: as above
}

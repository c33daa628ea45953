// Command chartreadme writes charts/redlease/README.md from the chart's
// Chart.yaml and values.yaml (internal/chartdocs). Run by make manifests.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/redlease/redlease/internal/chartdocs"
)

func main() {
	dir := "charts/redlease"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "chartreadme:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	chartYAML, err := os.ReadFile(filepath.Join(dir, "Chart.yaml")) //nolint:gosec // G304: the chart directory given on the command line
	if err != nil {
		return err
	}
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml")) //nolint:gosec // G304: as above
	if err != nil {
		return err
	}
	readme, err := chartdocs.Render(chartYAML, valuesYAML)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), readme, 0o644) //nolint:gosec // G306: a README, readable by all as the rest of the tree
}

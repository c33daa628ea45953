/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package doctest reads what the repository's code defines, for the tests
// that hold the chart and the docs to it (test/helm, test/docs).
package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var metricName = regexp.MustCompile(`Name:\s*"(redlease_[a-z_]+)"`)

// DefinedMetrics collects the redlease_* metric names declared in the Go
// code (Name: "redlease_...") under root's controllers/ and pkg/, tests
// aside. Finding neither the controller's nor the library's best-known
// metric is an error: the pattern no longer matches the code.
func DefinedMetrics(root string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, dir := range []string{"controllers", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path) //nolint:gosec // G304: a Go file of this repository
			for _, m := range metricName.FindAllStringSubmatch(string(src), -1) {
				out[m[1]] = true
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if !out["redlease_lock_leases_held"] || !out["redlease_controller_locks"] {
		return nil, fmt.Errorf("metric definitions not found in controllers/ and pkg/ (found %v)", out)
	}
	return out, nil
}

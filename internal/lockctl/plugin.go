/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"path/filepath"
	"strings"
)

// PluginBinary is lockctl's name as a kubectl plugin: kubectl runs
// kubectl-redlease for `kubectl redlease ...`. The release ships a copy of
// lockctl under this name (and plugins/redlease.yaml, krew's manifest).
const PluginBinary = "kubectl-redlease"

// displayName is the command's name in help and usage lines: `kubectl
// redlease` when run as the plugin (argv0 its binary), else lockctl.
func displayName(argv0 string) string {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") == PluginBinary {
		return "kubectl redlease"
	}
	return "lockctl"
}

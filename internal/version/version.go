/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package version is the version the binaries report: the VERSION file at
// the root of the repository, stamped at link time by the Makefile
// (-X github.com/redlease/redlease/internal/version.version=...), and what
// the Go toolchain recorded in the binary's build info.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and revision are set with -ldflags -X by `make build`,
// `make image` and `make release`; a plain `go build` leaves "dev" and
// the revision the toolchain recorded, if any.
var (
	version  = "dev"
	revision = ""
)

// Info is what `manager --version` and `lockctl version` print.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"` // the VCS commit, when the build recorded it
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's version information.
func Get() Info {
	i := Info{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok && i.Revision == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				i.Revision = s.Value
			}
		}
	}
	return i
}

// String is the one-line form: "v0.1.0 (go1.26.8 linux/amd64)", with the
// revision when known.
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		s += " " + i.Revision
	}
	return fmt.Sprintf("%s (%s %s)", s, i.GoVersion, i.Platform)
}

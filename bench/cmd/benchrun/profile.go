package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// profiled runs f, writing this process's CPU profile to path while it
// runs (nothing when path is empty): where a scenario's client CPU goes.
func profiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path) //nolint:gosec // G304: a path the person running the benchmark chose
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		_ = out.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	err = f()
	pprof.StopCPUProfile()
	return errors.Join(err, out.Close())
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/redlease/redlease/bench"
)

// pinnedEnv marks a runner that -pin has already re-executed under taskset,
// with the CPU list it was given, so that it does not do it again.
const pinnedEnv = "REDLEASE_BENCH_PINNED"

// pinning is -pin's value: the CPU lists (taskset -c's syntax) for this
// process and its worker processes, and for redis-server.
type pinning struct {
	clients, server string
}

// parsePin reads -pin "C/S" ("0/1": clients on CPU 0, the server on 1;
// "0/0": all on CPU 0). Empty is no pinning.
func parsePin(v string) (pinning, bool, error) {
	if v == "" {
		return pinning{}, false, nil
	}
	c, s, ok := strings.Cut(v, "/")
	if !ok || !cpuList(c) || !cpuList(s) {
		return pinning{}, false, fmt.Errorf("-pin %q: want CLIENT-CPUS/SERVER-CPUS, each a taskset -c list (e.g. 0/1, 0/0, 0-1/2)", v)
	}
	return pinning{clients: c, server: s}, true, nil
}

// cpuList reports whether v looks like a taskset -c list: digits, commas
// and dashes. taskset itself says what it does not accept.
func cpuList(v string) bool {
	return v != "" && strings.Trim(v, "0123456789,-") == ""
}

// pin puts this process on p.clients by re-executing it under taskset (the
// process's every thread and the worker processes it starts inherit the
// mask; setting it from here would reach only the calling thread), and has
// bench.StartServer run every redis-server on p.server. It returns only
// when this process already runs pinned, or with an error.
func pin(p pinning) error {
	if err := os.Setenv(bench.ServerCPUsEnv, p.server); err != nil {
		return err
	}
	if os.Getenv(pinnedEnv) == p.clients {
		return nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("-pin needs taskset (util-linux): %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{"taskset", "-c", p.clients, exe}, os.Args[1:]...)
	err = syscall.Exec(taskset, argv, append(os.Environ(), pinnedEnv+"="+p.clients)) //nolint:gosec // G204: re-executes this benchmark binary, with its own arguments, under taskset
	return fmt.Errorf("re-executing under taskset: %w", err)
}

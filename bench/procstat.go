package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Another process's memory and CPU, read from /proc: the agent is a child
// process, so getrusage(RUSAGE_SELF), which Held uses, does not see it, and
// RUSAGE_CHILDREN counts children only once they have exited.

// userHZ is the unit of /proc/PID/stat's CPU times: USER_HZ, which Linux
// fixes at 100 for every architecture's user-space ABI (sysconf(_SC_CLK_TCK)
// answers 100; reading it would take cgo).
const userHZ = 100

// ProcCPU is process pid's user+system CPU time so far, all its threads.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// Memory is a process's resident memory from /proc/PID/status, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the most it was resident
	Anon int64 // RssAnon: the heap, stacks and runtime, what the process allocated
	File int64 // RssFile: mapped files, the binary's own pages among them
}

// ProcMemory reads process pid's resident memory.
func ProcMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseMemory(string(b))
}

func parseMemory(status string) (Memory, error) {
	var m Memory
	for _, f := range []struct {
		name string
		to   *int64
	}{{"VmRSS", &m.RSS}, {"VmHWM", &m.Peak}, {"RssAnon", &m.Anon}, {"RssFile", &m.File}} {
		n, err := parseStatusKB(status, f.name)
		if err != nil {
			return Memory{}, err
		}
		*f.to = n
	}
	return m, nil
}

// parseStatCPU reads utime+stime (fields 14 and 15, in USER_HZ ticks) from
// the text of /proc/PID/stat. Field 2, the command name in parentheses, may
// hold spaces and parentheses itself, so fields are counted from the last
// ")".
func parseStatCPU(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	// After ")": field 3 (state) is the first, so utime is the 12th.
	f := strings.Fields(stat[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// parseStatusKB reads the field name ("VmRSS") of /proc/PID/status, "NAME:
// <n> kB", in bytes.
func parseStatusKB(status, name string) (int64, error) {
	for line := range strings.Lines(status) {
		v, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		n, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
		if unit != "kB" {
			return 0, fmt.Errorf("/proc status %s: %q, want a number of kB", name, strings.TrimSpace(v))
		}
		kb, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status %s: %w", name, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no %s", name)
}

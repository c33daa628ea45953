package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/redlease/redlease/bench"
)

// Issue 43's goals for an agent holding 1,000 leases.
const (
	goalRSS = 32 << 20
	goalCPU = 0.05
)

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func memory(m bench.Memory) string {
	return fmt.Sprintf("%s (%.1f + %.1f)", mib(m.RSS), float64(m.Anon)/(1<<20), float64(m.File)/(1<<20))
}

// goal says whether r meets the goals, and by how much it misses them.
func (r result) goal() string {
	var missed []string
	if r.held.RSS >= goalRSS {
		missed = append(missed, fmt.Sprintf("RSS %.2f× the 32 MiB", float64(r.held.RSS)/goalRSS))
	}
	if r.CPUShare() >= goalCPU {
		missed = append(missed, fmt.Sprintf("CPU %.2f× the 5 %%", r.CPUShare()/goalCPU))
	}
	if len(missed) == 0 {
		return "met"
	}
	return "missed: " + strings.Join(missed, ", ")
}

// keepAlives says how a mode keeps its leases.
func keepAlives(s settings, mode string) string {
	if mode == "streams" {
		return "an open stream each (gRPC)"
	}
	protocol := "gRPC"
	if mode == "unary-json" {
		protocol = "HTTP/JSON"
	}
	return fmt.Sprintf("KeepAlive every %v (period %v), %s", s.every, s.period, protocol)
}

func render(s settings, rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| mode | leases | kept alive by | RSS idle (anon + file) | RSS held (anon + file) | peak RSS | agent CPU (%% of a core) | Redis commands/s | taking them | lost | goal (< 32 MiB, < 5 %%) |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %.2f %% | %.0f | %v | %d | %s |\n", r.mode, s.leases, keepAlives(s, r.mode),
			memory(r.idle), memory(r.held), mib(r.held.Peak), 100*r.CPUShare(), r.commandsPerSec, r.acquire.Round(time.Millisecond), r.lost, r.goal())
	}
	fmt.Fprintf(&b, "\nAgent TTL %v (watchdog renewal every %v), window %v after %v of renewals. RSS is VmRSS (RssAnon + RssFile: what the agent allocated, and the mapped pages of its binary) "+
		"a second after the agent started, and at the window's end; peak RSS is VmHWM. CPU is the agent's utime+stime (/proc/PID/stat) over the window.\n",
		s.ttl, s.ttl/3, s.window, s.ttl/3+s.ttl/6)
	return b.String()
}

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/redlease/redlease/bench"
)

// Issue 43's goals for acquire+release through the agent, against the
// library on the same server in the same rounds.
const (
	agentGoalRatio = 1.3
	agentGoalAdded = 100 * time.Microsecond
)

// agentPair is an agent row and the library row it is read against: the
// "redlease" row at the same level, which runs the same Lua on the same
// server; and, uncontended, the no-op calls over the same protocol
// (calls) and the process-hop floor (hop), nil where the scenario has none.
type agentPair struct {
	agent, lib row
	calls, hop *row
}

// least is the smallest ratio to the library that any out-of-process agent
// could reach in this run: the library's p50 plus the hop floor's, over the
// library's; 0 without a hop floor.
func (p agentPair) least() float64 {
	if p.hop == nil || p.lib.Lat.P50 <= 0 {
		return 0
	}
	return float64(p.lib.Lat.P50+p.hop.Lat.P50) / float64(p.lib.Lat.P50)
}

// added is what the agent adds to the library's p50.
func (p agentPair) added() time.Duration { return p.agent.Lat.P50 - p.lib.Lat.P50 }

func (p agentPair) ratio() string { return ratio(float64(p.agent.Lat.P50), float64(p.lib.Lat.P50)) }

// goal says whether the pair meets issue 43's goals, and by how much it
// misses them.
func (p agentPair) goal() string {
	if p.agent.Lat.P50 <= 0 || p.lib.Lat.P50 <= 0 {
		return "—"
	}
	r := float64(p.agent.Lat.P50) / float64(p.lib.Lat.P50)
	var missed []string
	if r > agentGoalRatio {
		missed = append(missed, fmt.Sprintf("%.2f× over %.1f×", r, agentGoalRatio))
	}
	if p.added() > agentGoalAdded {
		missed = append(missed, fmt.Sprintf("+%s over +%s", fmtDur(p.added()), fmtDur(agentGoalAdded)))
	}
	if len(missed) == 0 {
		return "met"
	}
	out := "missed: " + strings.Join(missed, ", ")
	if least := p.least(); least > agentGoalRatio {
		out += fmt.Sprintf(" (below the hop floor: no agent process gets under %.2f× here)", least)
	}
	return out
}

// agentPairs are rows's agent rows, each with its library row.
func agentPairs(rows []row) []agentPair {
	var out []agentPair
	for _, r := range rows {
		if r.Family != bench.FamilyAgent {
			continue
		}
		if lib := findRow(rows, r.Level, "redlease"); lib != nil {
			// "redlease via agent (gRPC)" goes with "agent no-op calls (gRPC)".
			protocol := strings.TrimPrefix(r.Name, "redlease via agent ")
			out = append(out, agentPair{r, *lib, findRow(rows, r.Level, "agent no-op calls "+protocol), findRow(rows, r.Level, "process hop floor")})
		}
	}
	return out
}

// callsP50 is the p50 of the no-op call pair, "—" without one.
func (p agentPair) callsP50() string {
	if p.calls == nil {
		return "—"
	}
	return fmtDur(p.calls.Lat.P50)
}

// hopP50 is the p50 of the process-hop floor with the least ratio it
// allows, "—" without one.
func (p agentPair) hopP50() string {
	if p.hop == nil {
		return "—"
	}
	return fmt.Sprintf("%s (%.2f×)", fmtDur(p.hop.Lat.P50), p.least())
}

// callsCPU is the agent's CPU time per no-op call pair, "—" without one.
func (p agentPair) callsCPU() string {
	if p.calls == nil {
		return "—"
	}
	return agentCPUPerOp(*p.calls)
}

// fmtAdded formats a difference of p50s with its sign.
func fmtAdded(d time.Duration) string {
	if d < 0 {
		return "−" + fmtDur(-d)
	}
	return "+" + fmtDur(d)
}

// agentCPUPerOp is the agent's CPU time per cycle, "—" when not measured.
func agentCPUPerOp(r row) string {
	if r.Run.Ops == 0 {
		return "—"
	}
	return fmtDur(r.Run.AgentCPU / time.Duration(r.Run.Ops))
}

func writeAgent(b *strings.Builder, res *results) {
	un, procs := agentPairs(res.uncontended), agentPairs(res.processes)
	if len(un) == 0 && len(procs) == 0 {
		return
	}
	b.WriteString("### Through the lock agent\n\n")
	if len(un) > 0 {
		fmt.Fprintf(b, "Uncontended acquire+release (the rows above) through `lockctl agent --redis … --ttl %v` on a Unix socket, a separate process started by this run: "+
			"TryAcquireLease (unary) then Release, over gRPC (HTTP/2, one connection) and over Connect's HTTP/JSON (HTTP/1.1), read against the library's own row (\"redlease\", scripts: "+
			"the agent makes its first call before the functions row loads the library, so it runs the same scripts). "+
			"No-op calls is the cycle of the \"agent no-op calls\" row over the same protocol: two KeepAlive calls for an unknown lease, answered NOT_FOUND without Redis, "+
			"what the socket, HTTP and Connect alone add to any cycle: its p50, and the agent's CPU per pair. "+
			"Hop floor is the \"process hop floor\" row: two PINGs to redis-server on its Unix socket, two round trips to a process that does no work, the least any agent process adds to a cycle; "+
			"in brackets, the library's p50 plus it over the library's: the least ratio an out-of-process agent can reach in this run. "+
			"Agent CPU/cycle is the agent process's user+system time (/proc/PID/stat) over the cycles; the agent's Redis commands are not watched, so its server cmd time shows as —. "+
			"Goal (issue 43): p50 ≤ %.1f× the library's and ≤ +%s.\n\n", res.settings.ttl, agentGoalRatio, fmtDur(agentGoalAdded))
		b.WriteString("| goroutines | row | p50 | p99 | library p50 | ÷ library | added | agent CPU/cycle | no-op calls p50 | their agent CPU | hop floor p50 (least ÷ library) | goal |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, p := range un {
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p.agent.Level, p.agent.Name, fmtDur(p.agent.Lat.P50), fmtDur(p.agent.Lat.P99),
				fmtDur(p.lib.Lat.P50), p.ratio(), fmtAdded(p.added()), agentCPUPerOp(p.agent), p.callsP50(), p.callsCPU(), p.hopP50(), p.goal())
		}
		b.WriteString("\n")
	}
	if len(procs) > 0 {
		b.WriteString("Hand-off between processes (the processes table above): every worker process takes the lock through an agent of its own, as each pod has its sidecar, " +
			"and waits inside it (the library's waiting line); against redlease with a Locker per process, in the same rounds.\n\n")
		b.WriteString("| processes | row | hand-off p50 | p99 | library p50 | ÷ library | added | fairness |\n|---:|---|---:|---:|---:|---:|---:|---|\n")
		for _, p := range procs {
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", p.agent.Level, p.agent.Name, fmtDur(p.agent.Lat.P50), fmtDur(p.agent.Lat.P99),
				fmtDur(p.lib.Lat.P50), p.ratio(), fmtAdded(p.added()), fairness(p.agent))
		}
		b.WriteString("\n")
	}
}

// writeAgentHeadlines is one line per agent row and level.
func writeAgentHeadlines(b *strings.Builder, res *results) {
	for _, p := range agentPairs(res.uncontended) {
		fmt.Fprintf(b, "- Through the agent, uncontended, %d goroutine(s): %s p50 %s = %s the library's %s, %s (goal ≤ %.1f× and ≤ +%s: %s); two no-op calls take %s, two round trips to another process (hop floor) %s.\n",
			p.agent.Level, p.agent.Name, fmtDur(p.agent.Lat.P50), p.ratio(), fmtDur(p.lib.Lat.P50), fmtAdded(p.added()), agentGoalRatio, fmtDur(agentGoalAdded), p.goal(), p.callsP50(), p.hopP50())
	}
	for _, p := range agentPairs(res.processes) {
		fmt.Fprintf(b, "- Through the agent, between %d processes: %s hand-off p50 %s = %s the library's %s, %s; fairness %s.\n",
			p.agent.Level, p.agent.Name, fmtDur(p.agent.Lat.P50), p.ratio(), fmtDur(p.lib.Lat.P50), fmtAdded(p.added()), fairness(p.agent))
	}
}

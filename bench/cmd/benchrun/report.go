package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redlease/redlease/bench"
)

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", (d+500*time.Nanosecond)/time.Microsecond)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func fmtRate(x float64) string {
	if x <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", x)
}

// ratio formats a/b, or "—" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// best is the best value any peer row reached at one level, and who reached it.
type best struct {
	p50     time.Duration
	p50Name string
	ops     float64
	opsName string
}

func bestPeer(rows []row, level int) best {
	var b best
	for _, r := range rows {
		if r.Level != level || !bench.IsPeer(r.Family) {
			continue
		}
		if r.Lat.P50 > 0 && (b.p50 == 0 || r.Lat.P50 < b.p50) {
			b.p50, b.p50Name = r.Lat.P50, r.Name
		}
		if t := r.Run.Throughput(); t > b.ops {
			b.ops, b.opsName = t, r.Name
		}
	}
	return b
}

// floorRow is the row of family (bench.FamilyFloor or FamilyFencedFloor)
// at level, nil when the scenario has none.
func floorRow(rows []row, level int, family string) *row {
	for i := range rows {
		if rows[i].Level == level && rows[i].Family == family {
			return &rows[i]
		}
	}
	return nil
}

// floors are the p50s every row is divided by (issue 45): the raw floor,
// which has no fence, and the fenced floor, the least a lock that hands out
// fences can do. Zero where the scenario has no such row.
type floors struct{ raw, fenced time.Duration }

func levelFloors(rows []row, level int) floors {
	var f floors
	if r := floorRow(rows, level, bench.FamilyFloor); r != nil {
		f.raw = r.Lat.P50
	}
	if r := floorRow(rows, level, bench.FamilyFencedFloor); r != nil {
		f.fenced = r.Lat.P50
	}
	return f
}

// ratios is d ÷ the raw floor and d ÷ the fenced floor, "—" for a floor
// that is missing.
func (f floors) ratios(d time.Duration) (raw, fenced string) {
	return ratio(float64(d), float64(f.raw)), ratio(float64(d), float64(f.fenced))
}

// fmtMicros formats a command time in µs, "—" when there is none.
func fmtMicros(us float64) string {
	if us <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f µs", us)
}

func findRow(rows []row, level int, name string) *row {
	for i := range rows {
		if rows[i].Level == level && rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}

func levels(rows []row) []int {
	var out []int
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1] != r.Level {
			out = append(out, r.Level)
		}
	}
	return out
}

func renderReport(res *results) string {
	var b strings.Builder
	s := res.settings
	m := res.machine
	mode := "full"
	if s.quick {
		mode = "quick (-quick): short windows, numbers are rough"
	}
	fmt.Fprintf(&b, "## Run of %s on %s\n\n", res.started.UTC().Format("2006-01-02 15:04 MST"), m.Server)
	fmt.Fprintf(&b, "- Machine: %s, %d cores (GOMAXPROCS %d), %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.Kernel)
	b.WriteString(pinLine(m, s))
	fmt.Fprintf(&b, "- Go %s; server %s (`%s` on 127.0.0.1, `--save \"\" --appendonly no`, one server for every library)\n", m.Go, m.Server, m.ServerBinary)
	fmt.Fprintf(&b, "- Libraries: redlease (this tree), redsync %s, redislock %s, all on go-redis %s with pool size %d\n",
		m.Versions["github.com/go-redsync/redsync/v4"], m.Versions["github.com/bsm/redislock"], m.Versions["github.com/redis/go-redis/v9"], s.poolSize)
	fmt.Fprintf(&b, "- Round trip to Redis (PING) p50: %v back to back, %v after %v idle (p99 %v and %v): the wake-up of an idle core, paid by every round trip that follows a wait\n",
		fmtDur(m.PingBusy.P50), fmtDur(m.PingIdle.P50), s.hold, fmtDur(m.PingBusy.P99), fmtDur(m.PingIdle.P99))
	fmt.Fprintf(&b, "- Load average (1/5/15 min): %s at start, %s at end; run took %v\n", m.LoadStart, res.loadEnd, res.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- Mode: %s; %d interleaved round(s) per scenario (every library runs once per round, so noise lands on all of them)\n\n", mode, s.rounds)

	writeHeadlines(&b, res)

	if len(res.uncontended) > 0 {
		fmt.Fprintf(&b, "### Uncontended acquire+release\n\n")
		fmt.Fprintf(&b, "Each goroutine locks and unlocks its own key back to back (TTL %v), for %v per round. Latency is one acquire+release cycle. "+
			"Redis CPU/op is redis-server's CPU time (user and system, from INFO cpu) per cycle: its scripts and its network handling. "+
			"Server cmd time/op is the part of it spent running the commands the clients sent (INFO commandstats usec; a script's time includes the commands it runs, which are not counted again). "+
			"The raw floor is SET NX PX + a compare-and-delete script; the fenced floor is one script {SET NX PX; INCR of the key's fence counter} + the same compare-and-delete, the least a lock that hands out fences can do in two round trips. "+
			"Ratios: latency ÷ each floor and ÷ best peer (lower is better), ops/s ÷ best peer (higher is better).\n\n", s.ttl, s.uncontended)
		writeLatencyTable(&b, res.uncontended, "goroutines")
	}
	if len(res.handoff) > 0 {
		writeHandoff(&b, res)
	}
	if len(res.processes) > 0 {
		writeProcesses(&b, res)
	}
	writeAgent(&b, res)
	if len(res.redlock) > 0 {
		fmt.Fprintf(&b, "### Redlock over %d nodes\n\n", s.redlockNodes)
		fmt.Fprintf(&b, "%d independent redis-server processes; acquire+release cycles as above, for %v per round. "+
			"The floor sends SET NX PX, then the compare-and-delete, to every node in parallel.\n\n", s.redlockNodes, s.redlock)
		writeLatencyTable(&b, res.redlock, "goroutines")
	}
	if len(res.held) > 0 {
		writeHeld(&b, res)
	}
	writeFamily(&b, res)
	return b.String()
}

// pinLine says where the run's processes ran: pinned by -pin, by a taskset
// around the runner, or not at all.
func pinLine(m machine, s settings) string {
	switch {
	case s.pin != "":
		return fmt.Sprintf("- Pinned with `-pin %s` (taskset): this run and its worker processes on CPU %s, redis-server on CPU %s, of the machine's %d\n",
			s.pin, m.ClientCPUs, m.ServerCPUs, m.Online)
	case m.Online > m.Cores:
		return fmt.Sprintf("- Pinned: this run, its worker processes and redis-server ran on %d of the machine's %d CPUs (taskset): every round trip is a switch on one core, none waits for an idle core to wake\n", m.Cores, m.Online)
	}
	return fmt.Sprintf("- Not pinned: this run, its worker processes and redis-server may run on any of the machine's %d CPUs (%s)\n", m.Online, m.ClientCPUs)
}

func writeLatencyTable(b *strings.Builder, rows []row, levelName string) {
	fmt.Fprintf(b, "| %s | library | p50 | p99 | ops/s | Redis cmds/op | Redis CPU/op | server cmd time/op | p50 ÷ raw floor | p50 ÷ fenced floor | p50 ÷ best peer | ops/s ÷ best peer |\n", levelName)
	fmt.Fprintf(b, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, lv := range levels(rows) {
		bp := bestPeer(rows, lv)
		fl := levelFloors(rows, lv)
		for _, r := range rows {
			if r.Level != lv {
				continue
			}
			raw, fenced := fl.ratios(r.Lat.P50)
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", lv, r.Name, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99),
				fmtRate(r.Run.Throughput()), r.CommandsPerOp(), fmtDur(r.CPUPerOp()), fmtMicros(r.CommandMicrosPerOp()), raw, fenced,
				ratio(float64(r.Lat.P50), float64(bp.p50)), ratio(r.Run.Throughput(), bp.ops))
		}
	}
	b.WriteString("\n")
	for _, lv := range levels(rows) {
		bp := bestPeer(rows, lv)
		fmt.Fprintf(b, "Best peer at %s=%d: p50 %s (%s), ops/s %s (%s). ", levelName, lv, fmtDur(bp.p50), bp.p50Name, fmtRate(bp.ops), bp.opsName)
	}
	b.WriteString("\n\n")
	writeConfigurations(b, rows, levelName)
}

// writeConfigurations is the folded table of every row's configuration
// and sample count, below a latency table.
func writeConfigurations(b *strings.Builder, rows []row, levelName string) {
	b.WriteString("<details><summary>configurations and sample counts</summary>\n\n| " + levelName + " | library | configuration | samples | mean | max |\n|---:|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %d | %s | %s | %d | %s | %s |\n", r.Level, r.Name, r.Tuning, r.Lat.N, fmtDur(r.Lat.Mean), fmtDur(r.Lat.Max))
	}
	b.WriteString("\n</details>\n\n")
}

// shownHandoff is the rows of the main hand-off table: every row outside
// a variant group, and the best (by throughput) of each group per level.
func shownHandoff(rows []row) []row {
	var out []row
	for _, lv := range levels(rows) {
		bestOf := map[string]int{}
		for i, r := range rows {
			if r.Level != lv || r.Variant == "" {
				continue
			}
			if j, ok := bestOf[r.Variant]; !ok || r.Run.Throughput() > rows[j].Run.Throughput() {
				bestOf[r.Variant] = i
			}
		}
		for i, r := range rows {
			if r.Level != lv {
				continue
			}
			if r.Variant == "" || bestOf[r.Variant] == i {
				out = append(out, r)
			}
		}
	}
	return out
}

// cross is the share of hand-offs that went to another worker (the rest
// went back to the releaser) and their median.
func cross(r row) string {
	if len(r.Run.Durations) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%, %s", 100*float64(len(r.Run.Cross))/float64(len(r.Run.Durations)), fmtDur(r.Cross.P50))
}

func fairness(r row) string {
	if len(r.Run.PerWorker) == 0 {
		return "—"
	}
	lo, hi := r.Run.PerWorker[0], r.Run.PerWorker[0]
	for _, n := range r.Run.PerWorker {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi == 0 {
		return "0/0"
	}
	return fmt.Sprintf("%d/%d (%.2f)", lo, hi, float64(lo)/float64(hi))
}

// handoffFloors are the uncontended floors' cycles at one goroutine: one
// release round trip plus one acquire round trip, the least a hand-off can
// take (with a fence, for the fenced floor). The floors do not wait, so the
// contended scenarios have no floor rows of their own.
func handoffFloors(res *results) floors { return levelFloors(res.uncontended, 1) }

func writeHandoff(b *strings.Builder, res *results) {
	s := res.settings
	fmt.Fprintf(b, "### Contended hand-off on one key\n\n")
	fmt.Fprintf(b, "N workers (goroutines of this process) take turns on one key: wait in Lock, hold it %v, release, repeat; %v per round. "+
		"Hand-off latency runs from the holder starting its release to the next acquisition returning to anyone, "+
		"both read from one monotonic clock in this process, so its floor is one release plus one acquire round trip: "+
		"the uncontended raw floor cycle at 1 goroutine (%s; the fenced floor's, %s, is the least with a fence). A hand-off either goes to another worker or back to the releaser, "+
		"which can re-acquire at once while the others sleep (polling libraries do this often: fast, but unfair); the table shows both. "+
		"Throughput can be at most about 1/(hold + hand-off). Redis cmds/acq counts every command Redis processed (inside scripts too) per acquisition: the price of polling; Redis CPU/acq is redis-server's CPU time per acquisition, what those commands cost it; server cmd time/acq the part of it spent running the commands the clients sent (INFO commandstats). "+
		"Fairness is the fewest and most acquisitions of any worker (and their ratio; 1.00 is perfectly even). "+
		"Peers appear with their defaults and with the best tuning tried (the best by throughput of each tuning group; every variant is in the table below). "+
		"Ratios to the best peer use the best value any peer configuration reached at that worker count.\n\n", s.hold, s.contended,
		fmtDur(handoffFloors(res).raw), fmtDur(handoffFloors(res).fenced))
	writeContended(b, res.handoff, handoffFloors(res), "workers", "worker")
}

func writeProcesses(b *strings.Builder, res *results) {
	s := res.settings
	most := slices.Max(s.processes)
	fmt.Fprintf(b, "### Contended hand-off between processes\n\n")
	fmt.Fprintf(b, "As in a cluster, where the contenders are pods: N separate worker processes (this binary re-executed), each with its own go-redis client "+
		"and its own Locker (or peer handle), take turns on one key, holding it %v each time, for %v per round (%v at %d processes: about 25 turns each). "+
		"Times are read from CLOCK_MONOTONIC, one clock for every process on the machine; the columns are those of the hand-off table above. "+
		"Peers run with the tuning that did best in the in-process hand-off (1 ms retries).\n\n", s.hold, s.processRound(0), s.processRound(most), most)
	writeContended(b, res.processes, handoffFloors(res), "processes", "process")
}

// writeContended is the table of a contended scenario, levelName (and
// one) being what the level counts: workers (worker), processes (process).
func writeContended(b *strings.Builder, rows []row, fl floors, levelName, one string) {
	fmt.Fprintf(b, "| %s | library | hand-off p50 | p99 | to another %s: share, p50 | acquisitions/s | fairness min/max | Redis cmds/acq | Redis CPU/acq | server cmd time/acq | p50 ÷ raw floor | p50 ÷ fenced floor | p50 ÷ best peer | acq/s ÷ best peer |\n",
		levelName, one)
	fmt.Fprintf(b, "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range shownHandoff(rows) {
		bp := bestPeer(rows, r.Level)
		raw, fenced := fl.ratios(r.Lat.P50)
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", r.Level, r.Name, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99),
			cross(r), fmtRate(r.Run.Throughput()), fairness(r), r.CommandsPerOp(), fmtDur(r.CPUPerOp()), fmtMicros(r.CommandMicrosPerOp()), raw, fenced,
			ratio(float64(r.Lat.P50), float64(bp.p50)), ratio(r.Run.Throughput(), bp.ops))
	}
	b.WriteString("\n")
	for _, lv := range levels(rows) {
		bp := bestPeer(rows, lv)
		fmt.Fprintf(b, "Best peer at %d %s: p50 %s (%s), %s acquisitions/s (%s). ", lv, levelName, fmtDur(bp.p50), bp.p50Name, fmtRate(bp.ops), bp.opsName)
	}
	overlaps, acq, errs := 0, 0, 0
	for _, r := range rows {
		overlaps += r.Run.Overlaps
		acq += r.Run.Ops
		errs += r.Run.Errors
	}
	fmt.Fprintf(b, "\n\nMutual exclusion check: %d acquisitions in all, %d began before the previous holder had started its release (must be 0); %d lock calls failed for reasons other than the end of a round.\n\n", acq, overlaps, errs)
	fmt.Fprintf(b, "<details><summary>every configuration</summary>\n\n| %s | library | configuration | hand-off p50 | p99 | to another: share, p50 | acquisitions/s | fairness | Redis cmds/acq | Redis CPU/acq | errors |\n|---:|---|---|---:|---:|---:|---:|---|---:|---:|---:|\n", levelName)
	for _, r := range rows {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %.1f | %s | %d |\n", r.Level, r.Name, r.Tuning, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99),
			cross(r), fmtRate(r.Run.Throughput()), fairness(r), r.CommandsPerOp(), fmtDur(r.CPUPerOp()), r.Run.Errors)
	}
	b.WriteString("\n</details>\n\n")
}

func bestHeldPeer(rs []bench.HeldResult) (cpu float64, cpuName string, cmds float64, cmdsName string) {
	for _, r := range rs {
		if !bench.IsPeer(r.Family) {
			continue
		}
		if c := r.CPUCores(); cpuName == "" || c < cpu {
			cpu, cpuName = c, r.Name
		}
		if c := r.CommandsPerSec(); cmdsName == "" || c < cmds {
			cmds, cmdsName = c, r.Name
		}
	}
	return
}

func writeHeld(b *strings.Builder, res *results) {
	s := res.settings
	fmt.Fprintf(b, "### %d leases held at once\n\n", s.leases)
	fmt.Fprintf(b, "One process takes %d leases on distinct keys (TTL %v, renewed every %v), waits %v so every lease has renewed, then measures a %v window: "+
		"this process's CPU time (getrusage user+system) over wall time, renewal scripts per second (EVALSHA+EVAL calls from `INFO commandstats`), "+
		"all commands per second (`total_commands_processed`, which counts the commands a script runs too), "+
		"redis-server's own CPU (`used_cpu_user+used_cpu_sys`), goroutines in this process, and leases lost by the end. "+
		"redlease renews with its watchdog; the peers have no watchdog, so they get the loop an application would write: a goroutine with a ticker per lease. "+
		"Floor for renewals: one per lease per interval = %.0f/s.\n\n",
		s.leases, s.heldTTL, s.heldRenew, s.heldRenew+s.heldRenew/2, s.window, float64(s.leases)/s.heldRenew.Seconds())
	floorCmds := float64(s.leases) / s.heldRenew.Seconds()
	bestCPU, bestCPUName, bestCmds, _ := bestHeldPeer(res.held)
	fmt.Fprintf(b, "| library | renewal | process CPU (%% of a core) | CPU ÷ best peer | renewals/s | ÷ floor | Redis commands/s | redis-server CPU (%% of a core) | goroutines | lost |\n")
	fmt.Fprintf(b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.held {
		fmt.Fprintf(b, "| %s | %s | %.1f %% | %s | %.0f | %s | %.0f | %.1f %% | %d | %d |\n", r.Name, r.Tuning, 100*r.CPUCores(), ratio(r.CPUCores(), bestCPU),
			r.ScriptsPerSec(), ratio(r.ScriptsPerSec(), floorCmds), r.CommandsPerSec(), 100*r.RedisCPU.Seconds()/r.Window.Seconds(), r.Goroutines, r.Lost)
	}
	fmt.Fprintf(b, "\nBest peer by process CPU: %s. Lowest peer command rate: %.0f/s. Taking the %d leases took: ", bestCPUName, bestCmds, s.leases)
	for i, r := range res.held {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s %v", r.Name, r.AcquireWall.Round(time.Millisecond))
	}
	b.WriteString(" (32 goroutines).\n\n")
}

// writeHeadlines states redlease's position in each scenario in a sentence.
// writeContendedHeadlines is one line per level and named redlease row of
// a contended scenario, against the best peer.
func writeContendedHeadlines(b *strings.Builder, rows []row, what, levelName string, names ...string) {
	for _, lv := range levels(rows) {
		bp := bestPeer(rows, lv)
		for _, name := range names {
			r := findRow(rows, lv, name)
			if r == nil {
				continue
			}
			fp, fo := findRow(rows, lv, bp.p50Name), findRow(rows, lv, bp.opsName)
			fmt.Fprintf(b, "- %s, %d %s: %s p50 %s vs best peer %s (%s, fairness %s) = %s; throughput %s vs %s (%s, fairness %s) = %s; %s fairness %s, %.1f Redis commands per acquisition (best peer's %.1f).\n",
				what, lv, levelName, name, fmtDur(r.Lat.P50), fmtDur(bp.p50), bp.p50Name, fairness(*fp), ratio(float64(r.Lat.P50), float64(bp.p50)),
				fmtRate(r.Run.Throughput()), fmtRate(bp.ops), bp.opsName, fairness(*fo), ratio(r.Run.Throughput(), bp.ops), name, fairness(*r), r.CommandsPerOp(), fo.CommandsPerOp())
		}
	}
}

// writeUncontendedHeadlines is one line per level and redlease row of the
// uncontended scenario: its p50 to both floors and to the best peer, and
// its server command time against the fenced floor's (issue 45's goals).
func writeUncontendedHeadlines(b *strings.Builder, rows []row) {
	for _, lv := range levels(rows) {
		fl := levelFloors(rows, lv)
		fenced := floorRow(rows, lv, bench.FamilyFencedFloor)
		bp := bestPeer(rows, lv)
		for _, r := range rows {
			if r.Level != lv || r.Family != bench.FamilyRedlease {
				continue
			}
			raw, fencedRatio := fl.ratios(r.Lat.P50)
			fmt.Fprintf(b, "- Uncontended, %d goroutine(s): %s p50 %s = %s the raw floor, %s the fenced floor and %s the best peer (%s); throughput %s the best peer's (%s); server command time %s per cycle%s.\n",
				lv, r.Name, fmtDur(r.Lat.P50), raw, fencedRatio, ratio(float64(r.Lat.P50), float64(bp.p50)), bp.p50Name,
				ratio(r.Run.Throughput(), bp.ops), bp.opsName, fmtMicros(r.CommandMicrosPerOp()), overFenced(r, fenced))
		}
	}
}

// overFenced is r's server command time against the fenced floor's, as
// " (+1.2 µs over the fenced floor's)", or "" without both.
func overFenced(r row, fenced *row) string {
	if fenced == nil || fenced.CommandMicrosPerOp() <= 0 || r.CommandMicrosPerOp() <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%+.1f µs over the fenced floor's)", r.CommandMicrosPerOp()-fenced.CommandMicrosPerOp())
}

func writeHeadlines(b *strings.Builder, res *results) {
	b.WriteString("### Headlines\n\n")
	writeUncontendedHeadlines(b, res.uncontended)
	writeContendedHeadlines(b, res.handoff, "Hand-off", "workers", "redlease")
	writeContendedHeadlines(b, res.processes, "Between processes", "processes", "redlease", "redlease (FIFO)", "redlease (ticket order)", "redlease (functions)")
	writeAgentHeadlines(b, res)
	writeFamilyHeadlines(b, res.family)
	for _, lv := range levels(res.redlock) {
		bp := bestPeer(res.redlock, lv)
		for _, name := range []string{"redlease Redlock", "redlease Redlock (no fencing)"} {
			if r := findRow(res.redlock, lv, name); r != nil {
				fmt.Fprintf(b, "- Redlock, %d nodes, %d goroutine(s): %s p50 %s vs %s %s = %s.\n", res.settings.redlockNodes, lv, name, fmtDur(r.Lat.P50),
					bp.p50Name, fmtDur(bp.p50), ratio(float64(r.Lat.P50), float64(bp.p50)))
			}
		}
	}
	if len(res.held) > 0 {
		bestCPU, bestCPUName, _, _ := bestHeldPeer(res.held)
		for _, r := range res.held {
			if r.Family == bench.FamilyRedlease {
				fmt.Fprintf(b, "- %d held leases: redlease used %.1f %% of a core (%s the best peer, %s) for %.0f renewals/s (%.0f Redis commands/s); lost %d.\n",
					r.Leases, 100*r.CPUCores(), ratio(r.CPUCores(), bestCPU), bestCPUName, r.ScriptsPerSec(), r.CommandsPerSec(), r.Lost)
			}
		}
	}
	b.WriteString("\n")
}

package main

import (
	"fmt"
	"strings"
)

// renderComparison compares the runs of several servers, each against
// the first: the same scenarios, libraries and settings, run one server
// after the other on the same machine. Only what both measured is shown.
func renderComparison(all []*results) string {
	var b strings.Builder
	base := all[0]
	names := make([]string, len(all))
	for i, r := range all {
		names[i] = r.machine.Server
	}
	fmt.Fprintf(&b, "## Servers compared: %s\n\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "The same scenarios, one server after the other on the same machine (%d round(s) each; load average %s at the first start, %s at the last end). "+
		"Ratios are each server's ÷ %s's: p50 and Redis CPU/op below 1 are better, ops/s above 1. "+
		"Contended rows are each library's best configuration on the first server, matched by configuration on the others.\n\n",
		base.settings.rounds, base.machine.LoadStart, all[len(all)-1].loadEnd, base.machine.Server)
	for _, other := range all[1:] {
		fmt.Fprintf(&b, "| scenario | level | library | p50: %[1]s → %[2]s | ÷ | ops/s: %[1]s → %[2]s | ÷ | Redis CPU/op: %[1]s → %[2]s | ÷ | Redis cmds/op |\n", base.machine.Server, other.machine.Server)
		b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
		writeCompared(&b, "uncontended", base.uncontended, other.uncontended)
		writeCompared(&b, "between processes", shownHandoff(base.processes), other.processes)
		b.WriteString("\n")
	}
	return b.String()
}

// writeCompared writes a row for each of rows that others has too (same
// library, configuration and level).
func writeCompared(b *strings.Builder, scenario string, rows, others []row) {
	for _, r := range rows {
		o := matchRow(others, r)
		if o == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s | %.1f → %.1f |\n", scenario, r.Level, r.Name,
			fmtDur(r.Lat.P50), fmtDur(o.Lat.P50), ratio(float64(o.Lat.P50), float64(r.Lat.P50)),
			fmtRate(r.Run.Throughput()), fmtRate(o.Run.Throughput()), ratio(o.Run.Throughput(), r.Run.Throughput()),
			fmtDur(r.CPUPerOp()), fmtDur(o.CPUPerOp()), ratio(float64(o.CPUPerOp()), float64(r.CPUPerOp())),
			r.CommandsPerOp(), o.CommandsPerOp())
	}
}

func matchRow(rows []row, r row) *row {
	for i := range rows {
		if rows[i].Name == r.Name && rows[i].Tuning == r.Tuning && rows[i].Level == r.Level {
			return &rows[i]
		}
	}
	return nil
}

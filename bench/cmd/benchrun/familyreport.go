package main

import (
	"fmt"
	"strings"

	"github.com/redlease/redlease/bench"
)

// sharedGoal is issue 44's goal for a shared hold: an uncontended cycle's
// p50 at most this many times the exclusive lock's.
const sharedGoal = 1.1

// p50Over is r's p50 ÷ ref's, "—" without ref.
func p50Over(r row, ref *row) string {
	if ref == nil {
		return "—"
	}
	return ratio(float64(r.Lat.P50), float64(ref.Lat.P50))
}

// writeFamily is the lock family's section (issue 44): a shared hold
// against the lock, several keys at once against one by one, and a writer
// among readers; nothing when the scenario did not run.
func writeFamily(b *strings.Builder, res *results) {
	f, s := res.family, res.settings
	if len(f.shared)+len(f.keys)+len(f.writer) == 0 {
		return
	}
	b.WriteString("### Lock family: shared holds, several keys, a writer among readers\n\n")
	fmt.Fprintf(b, "Issue 44's other kinds of hold, beside the lock they build on. Every redlease row has a Locker and a client of its own, "+
		"with the options of the uncontended \"redlease\" row (TTL %v, fencing on, scripts). "+
		"No Go peer offers a shared lock or a multi-key lock in a tagged release (bsm/redislock %s has no ObtainMulti, redsync %s neither), "+
		"so the peers appear only as one-by-one rows: what their users write instead. "+
		"Cmds sent counts the commands the clients sent (a script call is one: about a round trip each); Redis cmds counts every command Redis ran, "+
		"those the scripts ran included; server cmd time is as in the uncontended table.\n\n",
		s.ttl, res.machine.Versions["github.com/bsm/redislock"], res.machine.Versions["github.com/go-redsync/redsync/v4"])
	writeShared(b, f.shared, s)
	writeKeys(b, f.keys, s)
	writeWriter(b, f.writer, s)
}

func writeShared(b *strings.Builder, rows []row, s settings) {
	if len(rows) == 0 {
		return
	}
	b.WriteString("#### A shared hold against the lock, uncontended\n\n")
	fmt.Fprintf(b, "Each goroutine takes a key of its own and gives it back, back to back, for %v per round: with `Acquire` (exclusive) or `AcquireShared` (shared), "+
		"then `Lease.Release`. The goal is a shared cycle's p50 at most %.1f× the exclusive one's.\n\n", s.uncontended, sharedGoal)
	b.WriteString("| goroutines | library | p50 | p99 | ops/s | cmds sent/cycle | Redis cmds/cycle | server cmd time/cycle | p50 ÷ exclusive |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.1f | %.1f | %s | %s |\n", r.Level, r.Name, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtRate(r.Run.Throughput()),
			r.SentPerOp(), r.CommandsPerOp(), fmtMicros(r.CommandMicrosPerOp()), p50Over(r, findRow(rows, r.Level, bench.ExclusiveName)))
	}
	b.WriteString("\n")
	writeConfigurations(b, rows, "goroutines")
}

func writeKeys(b *strings.Builder, rows []row, s settings) {
	if len(rows) == 0 {
		return
	}
	b.WriteString("#### Several keys at once\n\n")
	fmt.Fprintf(b, "One goroutine takes N keys of one hash tag (`{k}:0` … `{k}:N-1`) and gives them back, back to back, for %v per round: "+
		"redlease all or none in one script (`TryAcquireAll`, then `MultiLease.Release`), and redlease (`TryAcquire`), redislock and redsync one key at a time "+
		"in sorted order, then each released, as a caller without a multi-key lock does. "+
		"Ratios: p50 ÷ redlease one by one, and ÷ the best peer one by one (the lower p50 of redislock and redsync) at the same N.\n\n", s.uncontended)
	b.WriteString("| keys | library | p50 | p99 | ops/s | cmds sent/cycle | Redis cmds/cycle | server cmd time/cycle | p50 ÷ redlease one by one | p50 ÷ best peer |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		bp := bestPeer(rows, r.Level)
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.1f | %.1f | %s | %s | %s |\n", r.Level, r.Name, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtRate(r.Run.Throughput()),
			r.SentPerOp(), r.CommandsPerOp(), fmtMicros(r.CommandMicrosPerOp()), p50Over(r, findRow(rows, r.Level, bench.OneByOneName)),
			ratio(float64(r.Lat.P50), float64(bp.p50)))
	}
	b.WriteString("\n")
	for _, lv := range levels(rows) {
		bp := bestPeer(rows, lv)
		fmt.Fprintf(b, "Best peer at %d keys: p50 %s (%s). ", lv, fmtDur(bp.p50), bp.p50Name)
	}
	b.WriteString("\n\n")
	writeConfigurations(b, rows, "keys")
}

func writeWriter(b *strings.Builder, rows []row, s settings) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "#### A writer among %d readers\n\n", rows[0].Level)
	fmt.Fprintf(b, "%d readers, each with a Locker and a go-redis client of its own as separate pods would have, take one key shared (`AcquireShared`), "+
		"hold it %v and give it back, back to back; one writer with its own takes it exclusively (`Acquire`), holds it %v, gives it back and waits %v "+
		"before its next write; %v per round. The writer's wait runs from calling `Acquire` to its return: writer preference bounds it by the reads "+
		"in progress when it asks (one hold) and the hand-off, however many readers arrive after it. "+
		"Commands are per acquisition, the readers' and the writer's together.\n\n", rows[0].Level, s.hold, s.hold, bench.WriterGap, s.amongReaders)
	b.WriteString("| readers | library | writer's wait p50 | p99 | max | writes | reads/s | cmds sent/acq | Redis cmds/acq | server cmd time/acq |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	holds, overlaps, errs := 0, 0, 0
	for _, r := range rows {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %d | %s | %.1f | %.1f | %s |\n", r.Level, r.Name, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtDur(r.Lat.Max),
			r.Lat.N, fmtRate(bench.ReadRate(r.Run)), r.SentPerOp(), r.CommandsPerOp(), fmtMicros(r.CommandMicrosPerOp()))
		holds += r.Run.Ops
		overlaps += r.Run.Overlaps
		errs += r.Run.Errors
	}
	fmt.Fprintf(b, "\nMutual exclusion check: %d holds in all, %d began while one they exclude was held (must be 0); %d calls failed other than at the end of a round.\n\n",
		holds, overlaps, errs)
	writeConfigurations(b, rows, "readers")
}

// writeFamilyHeadlines is a line per level of each lock family table:
// the shared hold against the lock, all or none against one by one, and
// the writer's wait.
func writeFamilyHeadlines(b *strings.Builder, f familyResults) {
	for _, lv := range levels(f.shared) {
		ex, sh := findRow(f.shared, lv, bench.ExclusiveName), findRow(f.shared, lv, bench.SharedName)
		if ex == nil || sh == nil {
			continue
		}
		fmt.Fprintf(b, "- Lock family, uncontended, %d goroutine(s): a shared hold's p50 %s = %s the exclusive lock's %s (goal ≤ %.1f×); %.1f commands sent per cycle against %.1f.\n",
			lv, fmtDur(sh.Lat.P50), p50Over(*sh, ex), fmtDur(ex.Lat.P50), sharedGoal, sh.SentPerOp(), ex.SentPerOp())
	}
	for _, lv := range levels(f.keys) {
		all, one := findRow(f.keys, lv, bench.AllName), findRow(f.keys, lv, bench.OneByOneName)
		if all == nil || one == nil {
			continue
		}
		bp := bestPeer(f.keys, lv)
		fmt.Fprintf(b, "- Lock family, %d keys: TryAcquireAll p50 %s = %s redlease one by one (%s) and %s the best peer one by one (%s, %s); %.1f commands sent per cycle against %.1f one by one.\n",
			lv, fmtDur(all.Lat.P50), p50Over(*all, one), fmtDur(one.Lat.P50), ratio(float64(all.Lat.P50), float64(bp.p50)), bp.p50Name, fmtDur(bp.p50),
			all.SentPerOp(), one.SentPerOp())
	}
	for _, r := range f.writer {
		fmt.Fprintf(b, "- Lock family, a writer among %d readers: the writer waited %s p50, %s p99; the readers made %s reads/s.\n",
			r.Level, fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtRate(bench.ReadRate(r.Run)))
	}
}

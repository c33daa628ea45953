package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// BenchmarkTrimmedAgainstFullCalls: an uncontended acquire+release (fencing
// on, no waiting, no quarantine) as AcquireCall and Release send it (2 keys
// and 6 arguments, then 4 and 2) on one server and with every key and
// argument (5 and 12, then 5 and 7) on another, one cycle on each per
// iteration, so that whatever else the machine does lands on both. Reports
// each server's command time per cycle (INFO commandstats). Run it pinned
// (taskset -c 0) for CPU costs; with -protocol.functions for FCALL.
func BenchmarkTrimmedAgainstFullCalls(b *testing.B) {
	trimmed, full := newServer(b), newServer(b)
	a := protocol.AcquireArgs{TTL: 10 * time.Second, Fencing: true, Identity: "pod-a:1", Window: time.Second}
	r := protocol.ReleaseArgs{Window: time.Second, TTL: a.TTL}
	cycle := func(s *server, trim bool, value string) {
		a.Value = value
		acquire := protocol.Call{Script: protocol.AcquireScript, Keys: protocol.AcquireKeys("k"), Args: a.Argv()}
		release := protocol.FullReleaseCall("k", value, r)
		if trim {
			acquire, release = protocol.AcquireCall("k", a), protocol.ReleaseCall("k", value, r)
		}
		if res, err := s.r.Run(s.ctx, acquire).Int64Slice(); err != nil || res[0] != 1 {
			b.Fatalf("acquire = %v, %v", res, err)
		}
		if n, err := s.r.Run(s.ctx, release).Int64(); err != nil || n != 1 {
			b.Fatalf("release = %v, %v", n, err)
		}
	}
	for _, s := range []*server{trimmed, full} {
		s.must(s.c.ConfigResetStat(s.ctx).Err())
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := "pod-a:1/" + strconv.Itoa(i)
		cycle(trimmed, true, v)
		cycle(full, false, v)
	}
	b.StopTimer()
	b.ReportMetric(trimmed.commandMicros()/float64(b.N), "trimmed-us/cycle")
	b.ReportMetric(full.commandMicros()/float64(b.N), "full-us/cycle")
}

// commandMicros is the server's command time since its stats were reset,
// in µs: the scripts' or functions' (INFO commandstats usec).
func (s *server) commandMicros() float64 {
	info, err := s.c.Info(s.ctx, "commandstats").Result()
	s.must(err)
	var total float64
	for line := range strings.SplitSeq(info, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_fcall:"} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				for field := range strings.SplitSeq(rest, ",") {
					if v, ok := strings.CutPrefix(field, "usec="); ok {
						n, err := strconv.ParseFloat(v, 64)
						s.must(err)
						total += n
					}
				}
			}
		}
	}
	return total
}

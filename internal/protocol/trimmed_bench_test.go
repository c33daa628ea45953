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
// and 3 arguments, then 4 and 2) on one server and with every key and
// argument (5 and 14, then 5 and 7) on another, one cycle on each per
// iteration, so that whatever else the machine does lands on both. Reports
// each server's command time per cycle (INFO commandstats). Run it pinned
// (taskset -c 0) for CPU costs; with -protocol.functions for FCALL.
func BenchmarkTrimmedAgainstFullCalls(b *testing.B) {
	trimmed, full := newServer(b), newServer(b)
	a := protocol.AcquireArgs{TTL: 10 * time.Second, Fencing: true, Identity: "pod-a:1", Window: time.Second}
	r := protocol.ReleaseArgs{Window: time.Second, TTL: a.TTL}
	b.ReportAllocs()
	compareCommandTime(b,
		side{trimmed, trimmed.r, "trimmed-us/cycle", func(value string) (protocol.Call, protocol.Call) {
			a.Value = value
			return protocol.AcquireCall("k", a), protocol.ReleaseCall("k", value, r)
		}},
		side{full, full.r, "full-us/cycle", func(value string) (protocol.Call, protocol.Call) {
			a.Value = value
			return protocol.Call{Script: protocol.AcquireScript, Keys: protocol.AcquireKeys("k"), Args: a.Argv()},
				protocol.FullReleaseCall("k", value, r)
		}})
}

// side is one server of a comparison: the runner its calls go through,
// the unit its command time is reported under, and an uncontended cycle's
// calls (an acquire that must take key "k", a release that must free it)
// for a value.
type side struct {
	s     *server
	r     protocol.Runner
	unit  string
	calls func(value string) (acquire, release protocol.Call)
}

// compareCommandTime runs one cycle on each side per iteration, with the
// same value, so that whatever else the machine does lands on every side,
// and reports each server's command time per cycle (INFO commandstats).
func compareCommandTime(b *testing.B, sides ...side) {
	for _, sd := range sides {
		sd.s.must(sd.s.c.ConfigResetStat(sd.s.ctx).Err())
	}
	for i := 0; b.Loop(); i++ {
		v := "pod-a:1/" + strconv.Itoa(i)
		for _, sd := range sides {
			acquire, release := sd.calls(v)
			if res, err := ints(sd.r.Run(sd.s.ctx, acquire)); err != nil || res[0] != 1 {
				b.Fatalf("%s: acquire = %v, %v", sd.unit, res, err)
			}
			if n, err := sd.r.Run(sd.s.ctx, release).Int64(); err != nil || n != 1 {
				b.Fatalf("%s: release = %v, %v", sd.unit, n, err)
			}
		}
	}
	b.StopTimer()
	for _, sd := range sides {
		b.ReportMetric(sd.s.commandMicros()/float64(b.N), sd.unit)
	}
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

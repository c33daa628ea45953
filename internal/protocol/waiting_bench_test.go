package protocol_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// BenchmarkTheReadWithItsLine: what reading the waiting line adds to the
// controller's batched read: one pipelined round of 512 held keys, with no
// waiter (the common case) or 3 each, read as before the line (4 keys, 2 arguments) on one
// server and with the line's count and oldest arrival (the controller's
// read) on another, one round on each per iteration, so that whatever else
// the machine does lands on both. Reports each server's script time per
// round (INFO commandstats): the line costs no round trip, only this.
// Run it pinned (taskset -c 0) for CPU costs.
func BenchmarkTheReadWithItsLine(b *testing.B) {
	for _, waiters := range []int{0, 3} {
		b.Run(fmt.Sprintf("waiters=%d", waiters), func(b *testing.B) { benchmarkTheReadWithItsLine(b, waiters) })
	}
}

func benchmarkTheReadWithItsLine(b *testing.B, waiters int) {
	const keys = 512
	before, with := newServer(b), newServer(b)
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("bench/lock-%03d", i)
	}
	for _, s := range []*server{before, with} {
		_, err := s.c.Pipelined(s.ctx, func(p redis.Pipeliner) error {
			for _, k := range names {
				p.Set(s.ctx, k, "holder:1/"+fmt.Sprintf("%040d", 0), time.Hour)
				for w := range waiters {
					p.ZAdd(s.ctx, protocol.LineKey(k), redis.Z{Score: float64(time.Now().UnixMicro() + int64(w)), Member: fmt.Sprintf("w-%d:1/%040d", w, w)})
				}
			}
			return nil
		})
		s.must(err)
		s.must(s.c.ConfigResetStat(s.ctx).Err())
	}
	old := make([]protocol.Call, keys)
	for i, k := range names {
		old[i] = protocol.OldReadCall(k, 16)
	}
	for b.Loop() {
		for _, cmd := range before.r.Pipelined(before.ctx, old) {
			if reply, err := cmd.Slice(); err != nil || len(reply) != 5 {
				b.Fatalf("the read before the line: %v, %v", reply, err)
			}
		}
		reads, errs := protocol.ReadKeys(with.ctx, with.r, names, protocol.ReadLimits{Permits: 16})
		if errs[0] != nil || reads[0].Holder.Line == nil || reads[0].Holder.Line.Count != waiters {
			b.Fatalf("the read with the line: %+v, %v", reads[0], errs[0])
		}
	}
	b.StopTimer()
	b.ReportMetric(before.commandMicros()/float64(b.N), "before-us/512keys")
	b.ReportMetric(with.commandMicros()/float64(b.N), "with-line-us/512keys")
}

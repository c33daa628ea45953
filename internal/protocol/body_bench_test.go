package protocol_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// BenchmarkFunctionBodiesAgainstTheirCommands: an uncontended
// acquire+release (fencing on) through the library's functions on one
// server, and the same calls, byte for byte, on another server whose
// functions of the same names run only the commands such a cycle cannot do
// without (SET NX PX and INCR; GET, ZPOPMIN of the line and DEL) and
// nothing else. The difference between the two servers' command time per
// cycle (INFO commandstats) is what the bodies' own logic costs: the
// options they read, the failover quarantine's and FIFO's checks, the
// kind check of the key. Run it pinned (taskset -c 0).
func BenchmarkFunctionBodiesAgainstTheirCommands(b *testing.B) {
	library, commands := newServer(b), newServer(b)
	a := protocol.AcquireArgs{TTL: 10 * time.Second, Fencing: true, Identity: "pod-a:1"}
	release := protocol.ReleaseCall("k", "", protocol.ReleaseArgs{Window: time.Second})
	library.must(protocol.LoadLibrary(library.ctx, library.c))
	commands.must(commands.c.FunctionLoadReplace(commands.ctx, fmt.Sprintf(`#!lua name=%s
redis.register_function('%s', function(KEYS, ARGV)
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, redis.call('INCR', KEYS[2])} end
  return {0, redis.call('PTTL', KEYS[1]), 0}
end)
redis.register_function('%s', function(KEYS, ARGV)
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('ZPOPMIN', KEYS[3])
  redis.call('DEL', KEYS[1])
  return 1
end)`, protocol.LibraryName, protocol.AcquireScript.FunctionName(), release.Script.FunctionName())).Err())
	runners := map[*server]protocol.Runner{}
	for _, s := range []*server{library, commands} {
		runners[s] = protocol.NewCaller(protocol.FunctionsAuto).On(s.c)
		s.must(s.c.ConfigResetStat(s.ctx).Err())
	}
	cycle := func(s *server, value string) {
		a.Value = value
		r := runners[s]
		if res, err := r.Run(s.ctx, protocol.AcquireCall("k", a)).Int64Slice(); err != nil || res[0] != 1 {
			b.Fatalf("acquire = %v, %v", res, err)
		}
		if n, err := r.Run(s.ctx, protocol.ReleaseCall("k", value, protocol.ReleaseArgs{Window: time.Second})).Int64(); err != nil || n != 1 {
			b.Fatalf("release = %v, %v", n, err)
		}
	}
	for i := 0; b.Loop(); i++ {
		v := "pod-a:1/" + strconv.Itoa(i)
		cycle(library, v)
		cycle(commands, v)
	}
	b.StopTimer()
	b.ReportMetric(library.commandMicros()/float64(b.N), "library-us/cycle")
	b.ReportMetric(commands.commandMicros()/float64(b.N), "commands-only-us/cycle")
}

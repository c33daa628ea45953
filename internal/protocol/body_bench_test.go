package protocol_test

import (
	"fmt"
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
	r := protocol.ReleaseArgs{Window: time.Second}
	release := protocol.ReleaseCall("k", "", r) // for its function's name
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
	calls := func(value string) (protocol.Call, protocol.Call) {
		a.Value = value
		return protocol.AcquireCall("k", a), protocol.ReleaseCall("k", value, r)
	}
	functions := func(s *server) protocol.Runner { return protocol.NewCaller(protocol.FunctionsAuto).On(s.c) }
	compareCommandTime(b,
		side{library, functions(library), "library-us/cycle", calls},
		side{commands, functions(commands), "commands-only-us/cycle", calls})
}

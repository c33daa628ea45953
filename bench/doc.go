// Package bench measures redlease's pkg/lock side by side with the Redis
// lock libraries people use today — github.com/go-redsync/redsync/v4 and
// github.com/bsm/redislock — and with a raw baseline of the minimal
// commands (the round-trip floor), all against the same redis-server in the
// same run. A second baseline, the fenced floor, is the least a lock that
// hands out fences can do in two round trips (one script {SET NX PX; INCR}
// and a compare-and-delete): redlease, which fences by default, is measured
// against both (issue 45), in time and in the server's command time per
// cycle (INFO commandstats, for the calls the clients sent).
//
// Since issue 43 it also measures redlease through the lock agent
// (`lockctl agent`, a separate process on a Unix socket, built from the
// root module): acquire+release over gRPC and HTTP/JSON beside the library
// in the uncontended scenario, hand-offs between processes that each take
// the lock through an agent of their own, and, in cmd/agentload, the
// agent's memory and CPU while it holds many leases.
//
// Since issue 44 it also measures the lock family beside the lock
// (family.go, readers.go): a shared hold against an exclusive one, several
// keys taken all or none against the same keys taken one by one (the
// peers, which have neither, appear only one by one), and the waits of a
// writer among readers, each with a Locker and client of its own.
//
// It is its own Go module so the peers never enter the main module's
// go.mod. It cannot use the main module's internal/redistest, so Server
// starts throwaway redis-server processes itself.
//
// Two entry points share the code here:
//
//   - go test -run '^$' -bench . (testing.B, one benchmark per scenario);
//   - go run ./cmd/benchrun (every scenario for every library in one run,
//     percentiles computed from per-operation durations, a markdown report
//     and PNG plots).
package bench

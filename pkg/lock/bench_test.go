package lock_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The floor: the two commands an acquire+release cannot do without (SET NX PX,
// then a compare-and-delete script), on one connection, with no watchdog,
// fencing or bookkeeping. redlease's distance from it is its overhead.
// Besides ns/op it reports what measureCycles does: the client's CPU per
// cycle here is what BenchmarkAcquireRelease's serial one adds to.
func BenchmarkRawFloor(b *testing.B) {
	srv := redistest.StartStandalone(b)
	client := srv.Client(b)
	ctx := context.Background()
	conn := client.Conn()
	closeAtEnd(b, conn)
	del := redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	i := 0
	measureCycles(b, srv, func() {
		i++
		v := strconv.Itoa(i)
		if ok, err := conn.SetNX(ctx, "floor", v, 30*time.Second).Result(); err != nil || !ok {
			b.Fatalf("SET NX = %v %v", ok, err)
		}
		if n, err := del.Run(ctx, conn, []string{"floor"}, v).Int(); err != nil || n != 1 {
			b.Fatalf("delete = %v %v", n, err)
		}
	})
}

// Uncontended TryAcquire + Release: one goroutine (with measureCycles'
// figures), then many on distinct keys.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.StartStandalone(b)
	client := srv.Client(b)
	ctx := context.Background()
	for _, fencing := range []bool{true, false} {
		l, err := lock.New(client, lock.WithFencing(fencing))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("fencing=%v/serial", fencing), func(b *testing.B) {
			measureCycles(b, srv, func() { acquireRelease(ctx, b, l, "bench") })
		})
		b.Run(fmt.Sprintf("fencing=%v/parallel", fencing), func(b *testing.B) {
			var id atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := "bench-" + strconv.FormatInt(id.Add(1), 10)
				for pb.Next() {
					lease, err := l.TryAcquire(ctx, key)
					if err != nil {
						b.Error(err)
						return
					}
					if err := lease.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// Under WithReplicaAck(1) on a master with one replica: acquire+release,
// and a renewal (the WAIT rides in one pipeline with the script).
func BenchmarkReplicaAck(b *testing.B) {
	g := redistest.StartReplicated(b, 1)
	ctx := context.Background()
	l := newLocker(b, g.Master.Client(b), lock.WithReplicaAck(1, time.Second), lock.WithoutWatchdog())
	b.Run("acquire+release", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lease, err := l.TryAcquire(ctx, "acked")
			if err != nil {
				b.Fatal(err)
			}
			if err := lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("renew", func(b *testing.B) {
		lease, err := l.TryAcquire(ctx, "renewed")
		if err != nil {
			b.Fatal(err)
		}
		releaseAtEnd(b, lease)
		b.ReportAllocs()
		for b.Loop() {
			if err := lease.Renew(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Contended hand-off: W goroutines over two Lockers take turns on one key,
// holding it for no time. Each op is one hand-off; the release message wakes
// the next waiter.
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.StartStandalone(b)
	ctx := context.Background()
	for _, workers := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ls := make([]*lock.Locker, 2)
			for i := range ls {
				ls[i] = newLocker(b, srv.Client(b), lock.WithTTL(5*time.Second))
			}
			var remaining atomic.Int64
			remaining.Store(int64(b.N))
			done := make(chan struct{})
			b.ResetTimer()
			for w := range workers {
				go func() {
					defer func() { done <- struct{}{} }()
					for remaining.Add(-1) >= 0 {
						lease, err := ls[w%2].Acquire(ctx, "handoff")
						if err != nil {
							b.Error(err)
							return
						}
						if err := lease.Release(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			for range workers {
				<-done
			}
		})
	}
}

// Redlock over 5 nodes against one node, same operations, same run: the
// cost of the quorum (parallel fan-out, fence write-back).
func BenchmarkTopology(b *testing.B) {
	nodes := redistest.StartNodes(b, 5)
	clients := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		clients[i] = n.Client(b)
	}
	single := newLocker(b, clients[0])
	redlock := newRedlock(b, clients)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		l    *lock.Locker
	}{{"single", single}, {"redlock-5", redlock}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lease, err := tt.l.TryAcquire(ctx, "topology")
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A semaphore's permit next to a lock, same server, same run, paired: each
// iteration times an uncontended TryAcquire + Release of a lock, of a
// permit of a free 3-permit semaphore, and of one whose other 2 permits are
// held, one after the other, so that load on the machine falls on all
// three alike. Reported: µs per cycle of each, and each semaphore's ratio
// to the lock (ns/op is the sum of the three).
func BenchmarkSemaphoreAcquireRelease(b *testing.B) {
	client := redistest.StartStandalone(b).Client(b)
	ctx := context.Background()
	l := newLocker(b, client)
	others := newLocker(b, client)
	for range 2 {
		lease, err := others.Semaphore("bench-sem-busy", 3).TryAcquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		releaseAtEnd(b, lease)
	}
	kinds := []struct {
		name string
		try  func() (*lock.Lease, error)
	}{
		{"lock", func() (*lock.Lease, error) { return l.TryAcquire(ctx, "bench-lock") }},
		{"semaphore-3", func() (*lock.Lease, error) { return l.Semaphore("bench-sem", 3).TryAcquire(ctx) }},
		{"semaphore-3-two-held", func() (*lock.Lease, error) { return l.Semaphore("bench-sem-busy", 3).TryAcquire(ctx) }},
	}
	spent := make([]time.Duration, len(kinds))
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i, k := range kinds {
			start := time.Now()
			lease, err := k.try()
			if err != nil {
				b.Fatal(err)
			}
			if err := lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(start)
		}
		n++
	}
	reportPaired(b, n, spent, func(i int) string { return kinds[i].name }, "us/cycle")
}

// reportPaired reports each kind's mean in µs per unit, and each kind's
// ratio to the first.
func reportPaired(b *testing.B, n int, spent []time.Duration, name func(int) string, unit string) {
	for i, d := range spent {
		b.ReportMetric(float64(d.Microseconds())/float64(n), name(i)+"-"+unit)
		if i > 0 {
			b.ReportMetric(d.Seconds()/spent[0].Seconds(), name(i)+"/"+name(0))
		}
	}
}

// Contended hand-off on a semaphore: N permits and 4N goroutines over 4
// Lockers, holding for no time, next to a lock with 4 goroutines over 4
// Lockers, same server, same run. Each iteration runs 200 acquisitions of
// each, one after the other (so load on the machine falls on all alike);
// with every permit busy each is a hand-off from a release to the first
// waiter in line. Reported: µs per acquisition of each, each semaphore's
// ratio to the lock, and scripts per acquisition (INFO commandstats).
func BenchmarkSemaphoreHandoff(b *testing.B) {
	srv := redistest.StartStandalone(b)
	admin := srv.Client(b)
	ctx := context.Background()
	const round = 200
	permits := []int{0, 1, 3, 10} // 0: the lock
	name := func(i int) string {
		if permits[i] == 0 {
			return "lock"
		}
		return fmt.Sprintf("permits=%d", permits[i])
	}
	ls := make([]*lock.Locker, 4)
	for i := range ls {
		ls[i] = newLocker(b, srv.Client(b), lock.WithTTL(5*time.Second))
	}
	// run makes round acquisitions with 4 × max(p, 1) goroutines.
	run := func(p int) time.Duration {
		var remaining atomic.Int64
		remaining.Store(round)
		var wg sync.WaitGroup
		start := time.Now()
		for w := range 4 * max(p, 1) {
			wg.Go(func() {
				for remaining.Add(-1) >= 0 {
					var lease *lock.Lease
					var err error
					if p == 0 {
						lease, err = ls[w%len(ls)].Acquire(ctx, "handoff-lock")
					} else {
						lease, err = ls[w%len(ls)].Semaphore("handoff-sem-"+strconv.Itoa(p), p).Acquire(ctx)
					}
					if err != nil {
						b.Error(err)
						return
					}
					if err := lease.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	spent := make([]time.Duration, len(permits))
	n := 0
	admin.ConfigResetStat(ctx)
	for b.Loop() {
		for i, p := range permits {
			spent[i] += run(p)
		}
		n += round
	}
	b.StopTimer()
	reportPaired(b, n, spent, name, "us/acquisition")
	b.ReportMetric(float64(scripts(ctx, b, admin))/float64(n*len(permits)), "scripts/acquisition")
}

// Uncontended acquire+release with fencing, the Lua run as scripts
// (EVALSHA) and as the library's functions (FCALL), side by side on one
// server: the function library costs what the scripts cost. Besides ns/op
// it reports per cycle (an acquisition and its release) the median
// latency, this process's CPU and redis-server's CPU (/proc/<pid>/stat, 10
// ms ticks: run with -benchtime 5s or more).
func BenchmarkFunctionsAgainstScripts(b *testing.B) {
	srv := redistest.StartStandalone(b)
	client := srv.Client(b)
	ctx := context.Background()
	if err := protocol.LoadLibrary(ctx, client); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		mode lock.Functions
	}{{"scripts", lock.FunctionsOff}, {"functions", lock.FunctionsAuto}} {
		l, err := lock.New(client, lock.WithFunctions(tt.mode))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tt.name, func(b *testing.B) {
			measureCycles(b, srv, func() { acquireRelease(ctx, b, l, "bench-"+tt.name) })
		})
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// acquireRelease is one uncontended cycle on key.
func acquireRelease(ctx context.Context, b *testing.B, l *lock.Locker, key string) {
	lease, err := l.TryAcquire(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

// measureCycles runs cycle in b.Loop and reports, besides ns/op, the
// median cycle, this process's CPU and srv's CPU per cycle
// (/proc/<pid>/stat, 10 ms ticks: run with -benchtime 5s or more).
func measureCycles(b *testing.B, srv *redistest.Server, cycle func()) {
	b.ReportAllocs()
	var took []time.Duration
	client, server := cpuTime(b), processCPU(b, srv.PID())
	for b.Loop() {
		start := time.Now()
		cycle()
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	n := float64(len(took))
	b.ReportMetric(float64(processCPU(b, srv.PID())-server)/n/1e3, "server-us/cycle")
	b.ReportMetric(float64(cpuTime(b)-client)/n/1e3, "client-us/cycle")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e3, "p50-us/cycle")
}

// 10,000 leases of one Locker held on a 3-master Redis Cluster, renewed
// every second (one pipeline per master and turn): this process's CPU over
// a 3 s window, as a share of one core (bench/'s held scenario measures the
// same on one server, beside the peers). Run with -benchtime 1x.
func BenchmarkHeldOnCluster(b *testing.B) {
	cluster := redistest.StartCluster(b)
	l := newLocker(b, cluster.Client(b), lock.WithTTL(3*time.Second), lock.WithRenewInterval(time.Second))
	ctx := context.Background()
	const leases = 10000
	for i := range leases {
		lease, err := l.TryAcquire(ctx, "held-"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		releaseAtEnd(b, lease)
	}
	time.Sleep(1500 * time.Millisecond) // every lease renewed once
	for b.Loop() {
		start, wall := cpuTime(b), time.Now()
		time.Sleep(3 * time.Second)
		b.ReportMetric(100*float64(cpuTime(b)-start)/float64(time.Since(wall)), "%core")
	}
}

// processCPU is process pid's user and system CPU time, from
// /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ).
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which ends with the last ')':
	// state is the first, utime and stime the 12th and 13th.
	_, rest, _ := strings.Cut(string(raw[bytes.LastIndexByte(raw, ')'):]), " ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// cpuTime is this process's user and system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Uncontended acquire+release on a master with one replica, side by side:
// without replica safety, with the failover quarantine, and with
// WithReplicaAck(1) (waitForReplicas). Besides measureCycles' figures it
// reports the Redis commands per cycle (INFO commandstats: each script or
// function call and every command it ran), which the quarantine raises by
// its INFO sections and record read, with no round trip added.
func BenchmarkFailoverQuarantine(b *testing.B) {
	g := redistest.StartReplicated(b, 1)
	admin := g.Master.Client(b)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []lock.Option
	}{
		{"async", nil},
		{"quarantine", []lock.Option{lock.WithFailoverQuarantine(2*time.Second, lock.MissingEpochIsNew)}},
		{"waitForReplicas", []lock.Option{lock.WithReplicaAck(1, time.Second)}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			l := newLocker(b, g.Master.Client(b), append(tt.opts, lock.WithoutWatchdog())...)
			key := "quarantine-bench-" + tt.name
			acquireRelease(ctx, b, l, key) // the epoch record's first write, outside the count
			if err := admin.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			n := 0
			measureCycles(b, g.Master, func() {
				acquireRelease(ctx, b, l, key)
				n++
			})
			b.ReportMetric(float64(commandsRun(ctx, b, admin))/float64(n), "commands/op")
		})
	}
}

// commandsRun is how many commands client's server ran since its last
// CONFIG RESETSTAT, not counting this INFO.
func commandsRun(ctx context.Context, b *testing.B, client *redis.Client) int {
	b.Helper()
	text, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	n := -1
	for line := range strings.SplitSeq(text, "\n") {
		if _, stat, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.HasPrefix(line, "cmdstat_") {
			n += calls(stat)
		}
	}
	return n
}

package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The testing.B side of the comparison: `go test -run '^$' -bench .` in
// bench/. Each benchmark reports p50/p99 (from per-operation durations)
// beside ns/op. `go run ./cmd/benchrun` runs the same scenarios
// interleaved in one run and prints the ratios.

const benchTTL = 10 * time.Second

var (
	servers   []*Server // every server started by this test binary, closed by TestMain
	serversMu sync.Mutex
	single    = sync.OnceValues(func() (*Server, error) { return startTracked() })
	redlock5  = sync.OnceValues(func() ([]*Server, error) {
		var out []*Server
		for range 5 {
			s, err := startTracked()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	})
)

func startTracked() (*Server, error) {
	s, err := StartServer()
	if err != nil {
		return nil, err
	}
	serversMu.Lock()
	servers = append(servers, s)
	serversMu.Unlock()
	return s, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	serversMu.Lock()
	for _, s := range servers {
		s.Close()
	}
	serversMu.Unlock()
	os.Exit(code)
}

// clients hands out clients to srvs and closes them when tb ends.
func clients(tb testing.TB, srvs ...*Server) func() []*redis.Client {
	return func() []*redis.Client {
		var cs []*redis.Client
		for _, s := range srvs {
			c := s.Client(64)
			tb.Cleanup(func() { _ = c.Close() })
			cs = append(cs, c)
		}
		return cs
	}
}

func singleServer(tb testing.TB) *Server {
	s, err := single()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func reportLatency(b *testing.B, d []time.Duration) {
	l := Summarize(d)
	b.ReportMetric(float64(l.P50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l.P99.Nanoseconds()), "p99-ns")
}

func keyName(parts ...any) string {
	return strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(fmt.Sprint(parts...))
}

// benchLatency runs acquire+release cycles: one goroutine ("serial"), then
// b.RunParallel with a key per goroutine ("parallel").
func benchLatency(b *testing.B, libs []*Lib, scenario string) {
	ctx := context.Background()
	for _, lib := range libs {
		b.Run(keyName(lib.Name)+"/serial", func(b *testing.B) {
			lockf := lib.Worker(0)
			key := keyName(scenario, ":", lib.Name, ":serial")
			ds := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				release, err := lockf(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(ctx); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			reportLatency(b, ds)
		})
		b.Run(keyName(lib.Name)+"/parallel", func(b *testing.B) {
			var next atomic.Int64
			var mu sync.Mutex
			var all []time.Duration
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				g := int(next.Add(1))
				lockf := lib.Worker(g)
				key := keyName(scenario, ":", lib.Name, ":", g)
				var ds []time.Duration
				for pb.Next() {
					t0 := time.Now()
					release, err := lockf(ctx, key)
					if err != nil {
						b.Error(err)
						return
					}
					if err := release(ctx); err != nil {
						b.Error(err)
						return
					}
					ds = append(ds, time.Since(t0))
				}
				mu.Lock()
				all = append(all, ds...)
				mu.Unlock()
			})
			reportLatency(b, all)
		})
	}
}

// BenchmarkUncontended: acquire+release on a key of one's own; the raw
// floor, redlease (fencing on and off), redsync, redislock.
func BenchmarkUncontended(b *testing.B) {
	srv := singleServer(b)
	newClient := func() *redis.Client { return clients(b, srv)()[0] }
	libs, err := UncontendedLibs(newClient, benchTTL)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseAll(libs)
	benchLatency(b, libs, "uncontended")
}

// BenchmarkHandoff: workers take turns on one key, holding it 1ms; one op
// is one acquisition. Reports hand-off p50/p99 and the fairness ratio
// (fewest ÷ most acquisitions of any worker).
func BenchmarkHandoff(b *testing.B) {
	srv := singleServer(b)
	newClient := func() *redis.Client { return clients(b, srv)()[0] }
	libs, err := HandoffLibs(newClient, benchTTL)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseAll(libs)
	for _, workers := range []int{2, 8, 32} {
		for i, lib := range libs {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, keyName(lib.Name)), func(b *testing.B) {
				r, err := Contended(context.Background(), lib, workers, time.Millisecond, time.Hour, b.N, fmt.Sprintf("handoff:%d:%d:%d", i, workers, b.N))
				if err != nil {
					b.Fatal(err)
				}
				if r.Overlaps > 0 {
					b.Fatalf("%d acquisitions overlapped the previous holder", r.Overlaps)
				}
				reportLatency(b, r.Durations)
				lo, hi := r.PerWorker[0], r.PerWorker[0]
				for _, n := range r.PerWorker {
					lo, hi = min(lo, n), max(hi, n)
				}
				if hi > 0 {
					b.ReportMetric(float64(lo)/float64(hi), "fairness")
				}
			})
		}
	}
}

// BenchmarkRedlock: acquire+release over 5 independent nodes; the floor,
// redlease's NewRedlock (fencing on and off) and redsync with 5 pools.
func BenchmarkRedlock(b *testing.B) {
	nodes, err := redlock5()
	if err != nil {
		b.Fatal(err)
	}
	libs, err := RedlockLibs(clients(b, nodes...), benchTTL)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseAll(libs)
	benchLatency(b, libs, "redlock")
}

// BenchmarkFamily: the lock family (issue 44). A shared hold against the
// exclusive lock, and 2 and 8 keys all or none against the same keys one
// by one (peers too), in acquire+release cycles as BenchmarkUncontended's;
// then one writer among 16 readers, 1 ms holds, writes 5 ms apart: one op
// is one write, reported are the writer's wait p50/p99 and the reads per
// second.
func BenchmarkFamily(b *testing.B) {
	srv := singleServer(b)
	newClient := func() *redis.Client { return clients(b, srv)()[0] }
	b.Run("shared", func(b *testing.B) {
		libs, err := SharedLibs(newClient, benchTTL)
		if err != nil {
			b.Fatal(err)
		}
		defer CloseAll(libs)
		benchLatency(b, libs, "family-shared")
	})
	for _, n := range []int{2, 8} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			libs, err := KeysLibs(newClient, benchTTL, n)
			if err != nil {
				b.Fatal(err)
			}
			defer CloseAll(libs)
			benchLatency(b, libs, fmt.Sprint("family-keys", n))
		})
	}
	b.Run(fmt.Sprintf("writer-among-%d-readers", Readers), func(b *testing.B) {
		readers, writer, err := WriterLibs(newClient, benchTTL)
		if err != nil {
			b.Fatal(err)
		}
		defer CloseAll([]*Lib{readers, writer})
		r, err := WriterAmongReaders(context.Background(), readers, writer, Readers, time.Millisecond, WriterGap, time.Hour, b.N, keyName("family-rw:", b.N))
		if err != nil {
			b.Fatal(err)
		}
		if r.Overlaps > 0 {
			b.Fatalf("%d holds began while one they exclude was held", r.Overlaps)
		}
		reportLatency(b, r.Durations)
		b.ReportMetric(ReadRate(r), "reads/s")
	})
}

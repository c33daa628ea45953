package lock_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The floor: the two commands an acquire+release cannot do without (SET NX PX,
// then a compare-and-delete script), on one connection, with no watchdog,
// fencing or bookkeeping. redlease's distance from it is its overhead.
func BenchmarkRawFloor(b *testing.B) {
	client := redistest.StartStandalone(b).Client(b)
	ctx := context.Background()
	conn := client.Conn()
	closeAtEnd(b, conn)
	del := redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := strconv.Itoa(i)
		if ok, err := conn.SetNX(ctx, "floor", v, 30*time.Second).Result(); err != nil || !ok {
			b.Fatalf("SET NX = %v %v", ok, err)
		}
		if n, err := del.Run(ctx, conn, []string{"floor"}, v).Int(); err != nil || n != 1 {
			b.Fatalf("delete = %v %v", n, err)
		}
	}
}

// Uncontended TryAcquire + Release: one goroutine, then many on distinct keys.
func BenchmarkAcquireRelease(b *testing.B) {
	client := redistest.StartStandalone(b).Client(b)
	ctx := context.Background()
	for _, fencing := range []bool{true, false} {
		l, err := lock.New(client, lock.WithFencing(fencing))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("fencing=%v/serial", fencing), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lease, err := l.TryAcquire(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
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

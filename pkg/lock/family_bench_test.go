package lock_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The lock family against the lock, uncontended, interleaved in one loop
// so that load on the machine falls on all alike: a shared hold alone and
// beside three readers, and several keys taken all or none against the
// same keys taken one by one. Reported: µs per cycle (acquire and release)
// of each, and each one's ratio to the lock's.
func BenchmarkLockFamily(b *testing.B) {
	client := redistest.StartStandalone(b).Client(b)
	ctx := context.Background()
	l := newLocker(b, client)
	others := newLocker(b, client)
	for range 3 {
		lease, err := others.TryAcquireShared(ctx, "bench-read-busy")
		if err != nil {
			b.Fatal(err)
		}
		releaseAtEnd(b, lease)
	}
	keys := func(n int) []string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = fmt.Sprintf("bench-all-%d-%d", n, i)
		}
		return ks
	}
	cycle := func(take func(context.Context) (*lock.Lease, error)) func() error {
		return func() error {
			lease, err := take(ctx)
			if err != nil {
				return err
			}
			return lease.Release(ctx)
		}
	}
	all := func(ks []string) func() error {
		return func() error {
			m, err := l.TryAcquireAll(ctx, ks...)
			if err != nil {
				return err
			}
			return m.Release(ctx)
		}
	}
	oneByOne := func(ks []string) func() error {
		return func() error {
			leases := make([]*lock.Lease, 0, len(ks))
			for _, k := range ks {
				lease, err := l.TryAcquire(ctx, k)
				if err != nil {
					return err
				}
				leases = append(leases, lease)
			}
			for _, lease := range leases {
				if err := lease.Release(ctx); err != nil {
					return err
				}
			}
			return nil
		}
	}
	kinds := []struct {
		name string
		run  func() error
	}{
		{"lock", cycle(l.Mutex("bench-lock").TryAcquire)},
		{"shared", cycle(l.Mutex("bench-read").TryAcquireShared)},
		{"shared-beside-3", cycle(l.Mutex("bench-read-busy").TryAcquireShared)},
		{"all-2", all(keys(2))},
		{"one-by-one-2", oneByOne(keys(2))},
		{"all-8", all(keys(8))},
		{"one-by-one-8", oneByOne(keys(8))},
	}
	spent := make([]time.Duration, len(kinds))
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i, k := range kinds {
			start := time.Now()
			if err := k.run(); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(start)
		}
		n++
	}
	reportPaired(b, n, spent, func(i int) string { return kinds[i].name }, "us/cycle")
}

// Sixteen readers, each a Locker on a client of its own, take one key
// shared in a loop (1 ms reads, back to back) while one writer takes it
// exclusively b.N times (1 ms writes, 5 ms apart). Writer preference bounds
// the writer's wait to the reads already in progress: reported are the
// writer's wait p50 and p99 and the readers' acquisitions per second.
func BenchmarkWriterAmongReaders(b *testing.B) {
	srv := redistest.StartStandalone(b)
	ctx := context.Background()
	const readers = 16
	separate := func() *lock.Locker {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		closeAtEnd(b, c)
		return newLocker(b, c)
	}
	stop := make(chan struct{})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		reads int
	)
	for range readers {
		l := separate()
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lease, err := l.AcquireShared(ctx, "bench-rw")
				if err != nil {
					b.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
				if err := lease.Release(ctx); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		})
	}
	w := separate()
	var waits []time.Duration
	start := time.Now()
	for b.Loop() {
		asked := time.Now()
		lease, err := w.Acquire(ctx, "bench-rw")
		if err != nil {
			b.Fatal(err)
		}
		waits = append(waits, time.Since(asked))
		time.Sleep(time.Millisecond)
		if err := lease.Release(ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "writer-wait-p50-us")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "writer-wait-p99-us")
	mu.Lock()
	b.ReportMetric(float64(reads)/elapsed.Seconds(), "reads/s")
	mu.Unlock()
}

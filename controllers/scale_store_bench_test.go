/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// BenchmarkTenThousandLocksOnOneStore measures the controller the way a
// platform team runs it: 10,000 DistributedLocks on one LockStore, all
// created before the manager starts, the default probe interval (10s)
// and concurrency (4). It reports the time from the manager's start until
// all are Ready, then over a steady window the process's CPU (the
// manager; the benchmark's own polling is idle then), its resident
// memory, the connections the store's server sees, and the status writes
// per second. It asserts nothing about speed; it fails only if the locks
// never become Ready.
//
//	go test -run '^$' -bench TenThousandLocksOnOneStore -benchtime 1x -timeout 20m ./controllers/
func BenchmarkTenThousandLocksOnOneStore(b *testing.B) {
	locks := 10000
	if n, err := strconv.Atoi(os.Getenv("REDLEASE_SCALE_LOCKS")); err == nil && n > 0 {
		locks = n
	}
	const steady = 30 * time.Second
	for b.Loop() {
		srv := redistest.StartStandalone(b)
		h := newHarness(b, harnessOptions{probeInterval: DefaultProbeInterval, concurrency: scaleConcurrency(), discardLogs: true, startLater: true})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		ls := &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "shared"},
			Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}
		if err := h.c.Create(ctx, ls); err != nil {
			b.Fatal(err)
		}
		createStart := time.Now()
		createLocks(ctx, b, h, locks, func(int) v1alpha1.DistributedLockSpec {
			return onStore(v1alpha1.StoreKindLockStore, ls.Name, "")
		})
		created := time.Since(createStart)

		ready := watchReady(ctx, b, h)
		stopProfile := startCPUProfile(b, os.Getenv("REDLEASE_SCALE_PROFILE"), "cpu-start.pprof")
		start, startCPU := time.Now(), processCPU(b)
		h.start()
		ready.waitAllReady(ctx, b, locks)
		allReady := time.Since(start)
		startCores := (processCPU(b) - startCPU).Seconds() / allReady.Seconds()
		stopProfile()

		writes := countStatusWrites(ctx, b, h)
		cpuBefore, wallBefore := processCPU(b), time.Now()
		writesBefore := writes.Load()
		time.Sleep(steady)
		cpu := (processCPU(b) - cpuBefore).Seconds() / time.Since(wallBefore).Seconds()
		writeRate := float64(writes.Load()-writesBefore) / steady.Seconds()
		rss := residentMiB(b)
		live := liveHeapMiB()
		if dir := os.Getenv("REDLEASE_SCALE_PROFILE"); dir != "" {
			writeHeapProfile(b, dir+"/heap.pprof")
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		info, err := c.Info(ctx, "clients").Result()
		_ = c.Close()
		if err != nil {
			b.Fatal(err)
		}
		conns := parseField(info, "connected_clients") - 1 // minus this INFO's own connection

		b.ReportMetric(created.Seconds(), "s-to-create")
		b.ReportMetric(allReady.Seconds(), "s-start-to-all-ready")
		b.ReportMetric(startCores, "cores-until-ready")
		b.ReportMetric(cpu, "cores-steady")
		b.ReportMetric(rss, "MiB-rss")
		b.ReportMetric(live, "MiB-live-heap")
		b.ReportMetric(float64(conns), "conns/server")
		b.ReportMetric(writeRate, "status-writes/s-idle")
		b.Logf("%d locks on one LockStore: created in %v; manager start to all Ready %v (this process: %.2f cores meanwhile); steady: %.3f cores, %.0f MiB resident (%.0f MiB live heap), %d Redis connections, %.2f status writes/s; %d reconciles in all",
			locks, created.Round(time.Second), allReady.Round(100*time.Millisecond), startCores, cpu, rss, live, conns, writeRate, h.totalReconciles())
	}
}

// liveHeapMiB is the Go heap still reachable after a collection: what the
// process needs, as opposed to what it has not returned to the OS yet.
func liveHeapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// writeHeapProfile writes the heap profile to path (REDLEASE_SCALE_PROFILE).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path) //nolint:gosec // G304: a path the person running the benchmark chose
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// startCPUProfile profiles this process's CPU into dir/name until the
// returned function is called; nothing when dir is empty.
func startCPUProfile(b *testing.B, dir, name string) func() {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(dir + "/" + name) //nolint:gosec // G304: a path the person running the benchmark chose
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// createLocks creates n locks lock-00000… in h.ns, the i-th with spec(i),
// eight at a time.
func createLocks(ctx context.Context, b *testing.B, h *harness, n int, spec func(i int) v1alpha1.DistributedLockSpec) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: fmt.Sprintf("lock-%05d", i)},
					Spec: spec(i)}
				if err := h.c.Create(ctx, dl); err != nil {
					b.Errorf("creating %s: %v", dl.Name, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// readyWatch follows which of h.ns's locks are Ready, from a list and a
// watch started before the manager: listing 10,000 locks every second to
// find out would load the API server (and this process) more than the
// controller does, and slow what it measures.
type readyWatch struct {
	mu    sync.Mutex
	ready map[string]bool
	w     watch.Interface
}

func watchReady(ctx context.Context, b *testing.B, h *harness) *readyWatch {
	wc, err := client.NewWithWatch(h.env.Config, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	var list v1alpha1.DistributedLockList
	if err := wc.List(ctx, &list, client.InNamespace(h.ns)); err != nil {
		b.Fatal(err)
	}
	rw := &readyWatch{ready: map[string]bool{}}
	for i := range list.Items {
		rw.ready[list.Items[i].Name] = isReady(&list.Items[i]) == nil
	}
	rw.w, err = wc.Watch(ctx, &v1alpha1.DistributedLockList{}, client.InNamespace(h.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rw.w.Stop)
	go func() {
		for ev := range rw.w.ResultChan() {
			if dl, ok := ev.Object.(*v1alpha1.DistributedLock); ok {
				rw.mu.Lock()
				rw.ready[dl.Name] = ev.Type != watch.Deleted && isReady(dl) == nil
				rw.mu.Unlock()
			}
		}
	}()
	return rw
}

// count is how many locks are Ready now.
func (rw *readyWatch) count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, r := range rw.ready {
		if r {
			n++
		}
	}
	return n
}

// waitAllReady waits (checking every 100 ms) until n locks are Ready.
func (rw *readyWatch) waitAllReady(ctx context.Context, b *testing.B, n int) {
	for rw.count() < n {
		if ctx.Err() != nil {
			b.Fatalf("only %d of %d locks Ready", rw.count(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countStatusWrites counts MODIFIED events of h.ns's locks from now on,
// until ctx ends.
func countStatusWrites(ctx context.Context, b testing.TB, h *harness) *atomic.Int64 {
	wc, err := client.NewWithWatch(h.env.Config, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1alpha1.DistributedLockList{}, client.InNamespace(h.ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	var n atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				n.Add(1)
			}
		}
	}()
	return &n
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentMiB is this process's resident memory (VmRSS), or the Go heap
// in use where /proc is not there.
func residentMiB(b *testing.B) float64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
				return float64(kb) / 1024
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.Logf("no /proc/self/status: reporting the Go heap in use")
	return float64(m.HeapInuse) / (1 << 20)
}

// scaleConcurrency is REDLEASE_SCALE_CONCURRENCY, else the manager's
// default.
func scaleConcurrency() int {
	if n, err := strconv.Atoi(os.Getenv("REDLEASE_SCALE_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return 4
}

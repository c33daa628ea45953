package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Run is the raw outcome of running one library in one scenario, possibly
// merged over several rounds.
type Run struct {
	Durations []time.Duration // per-operation latency (uncontended), hand-off latency (contended) or the writer's waits (WriterAmongReaders)
	Cross     []time.Duration // contended: the hand-offs to another worker (the rest went back to the releaser)
	Ops       int             // completed acquire+release cycles
	Wall      time.Duration   // measured time, summed over rounds
	PerWorker []int           // acquisitions per goroutine (contended, WriterAmongReaders)
	Overlaps  int             // contended: acquisitions that began before the previous holder released, or one they exclude did (must be 0)
	Errors    int             // contended: failed Lock calls other than the ones the deadline ended
	// Sent is the commands worker processes sent (Processes; in-process
	// runs leave it to the caller's Sent hook).
	Sent Counts
	// AgentCPU is the CPU time the lock agent used during the run, for the
	// rows that go through one (uncontended).
	AgentCPU time.Duration
}

// Merge adds another round's outcome.
func (r *Run) Merge(o Run) {
	r.Durations = append(r.Durations, o.Durations...)
	r.Cross = append(r.Cross, o.Cross...)
	r.Ops += o.Ops
	r.Wall += o.Wall
	if r.PerWorker == nil {
		r.PerWorker = make([]int, len(o.PerWorker))
	}
	for i, n := range o.PerWorker {
		r.PerWorker[i] += n
	}
	r.Overlaps += o.Overlaps
	r.Errors += o.Errors
	r.Sent = r.Sent.Add(o.Sent)
	r.AgentCPU += o.AgentCPU
}

// Throughput is completed cycles per second of measured time.
func (r *Run) Throughput() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Wall.Seconds()
}

// Uncontended runs goroutines that each lock and unlock their own key
// (prefix + index) back to back for d, and records each acquire+release
// cycle's duration. The first error stops the run.
func Uncontended(ctx context.Context, lib *Lib, goroutines int, d time.Duration, prefix string) (Run, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	per := make([][]time.Duration, goroutines)
	var wg sync.WaitGroup
	var cpu0 time.Duration
	if lib.cpu != nil {
		cpu0 = lib.cpu()
	}
	start := time.Now()
	stop := start.Add(d)
	for g := range goroutines {
		lockf := lib.Worker(g)
		key := fmt.Sprintf("%s:%d", prefix, g)
		wg.Go(func() {
			ds := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(stop) {
					break
				}
				release, err := lockf(ctx, key)
				if err != nil {
					cancel(fmt.Errorf("%s: lock %q: %w", lib.Name, key, err))
					break
				}
				if err := release(ctx); err != nil {
					cancel(fmt.Errorf("%s: release %q: %w", lib.Name, key, err))
					break
				}
				ds = append(ds, time.Since(t0))
			}
			per[g] = ds
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Run{}, err
	}
	var r Run
	for _, ds := range per {
		r.Durations = append(r.Durations, ds...)
	}
	r.Ops, r.Wall = len(r.Durations), wall
	if lib.cpu != nil {
		r.AgentCPU = lib.cpu() - cpu0
	}
	return r, nil
}

// holding is one acquisition in a contended run, on the run's monotonic
// clock (offsets from its start).
type holding struct {
	worker             int
	acquired, released time.Duration
}

// Contended runs workers that take turns on one key for d: each waits in
// Lock, holds the key for hold, then releases it. The hand-off latency of
// an acquisition is the time from the previous holder starting its release
// to this acquisition returning, both read from the same monotonic clock in
// this process; it includes the release's round trip, the waker's delay and
// the acquire's round trip, so its floor is one release plus one acquire
// round trip. With limit > 0 the run also ends after limit acquisitions in
// all (testing.B's b.N).
func Contended(ctx context.Context, lib *Lib, workers int, hold, d time.Duration, limit int, key string) (Run, error) {
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	base := time.Now()
	per := make([][]holding, workers)
	fails := newFailures(workers)
	var wg sync.WaitGroup
	var tickets atomic.Int64
	for w := range workers {
		lockf := lib.Worker(w)
		wg.Go(func() {
			hs := make([]holding, 0, 1024)
			for runCtx.Err() == nil {
				if limit > 0 && tickets.Add(1) > int64(limit) {
					break
				}
				h, held, err := turn(runCtx, lockf, key, w, hold, base)
				fails.note(runCtx, w, held, err)
				if held {
					hs = append(hs, h)
				}
			}
			per[w] = hs
		})
	}
	wg.Wait()
	wall := time.Since(base)
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	return tallyHoldings(lib.Name, per, fails.n, fails.first, wall, d)
}

// turn is one holding of key in a contended run: lockf takes it, the
// holder keeps it for hold, then releases it, with 10 s of its own so that
// the run's end does not cut the release short. The holding's times are
// offsets from base. held is false when lockf failed (err is its error);
// else err is the release's.
func turn(ctx context.Context, lockf LockFunc, key string, worker int, hold time.Duration, base time.Time) (h holding, held bool, err error) {
	release, err := lockf(ctx, key)
	if err != nil {
		return holding{}, false, err
	}
	h = holding{worker: worker, acquired: time.Since(base)}
	time.Sleep(hold)
	h.released = time.Since(base)
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h, true, release(rctx)
}

// failures counts the failed calls of a contended run's workers and keeps
// the first error.
type failures struct {
	mu    sync.Mutex
	n     []int // per worker
	first error
}

func newFailures(workers int) *failures { return &failures{n: make([]int, workers)} }

// note counts the error of worker's turn (turn's held and err), unless it
// is a lock call that the end of the run (ctx) cut off.
func (f *failures) note(ctx context.Context, worker int, held bool, err error) {
	if err == nil || (!held && ctx.Err() != nil) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n[worker]++
	if f.first == nil {
		f.first = err
	}
}

// tallyHoldings turns every worker's holdings (times since the run's
// start) into a Run measured over min(wall, d).
func tallyHoldings(name string, per [][]holding, errs []int, firstErr error, wall, d time.Duration) (Run, error) {
	// Throughput counts the acquisitions made within d; hand-offs count all.
	var all []holding
	r := Run{PerWorker: make([]int, len(per)), Wall: min(wall, d)}
	for w, hs := range per {
		all = append(all, hs...)
		for _, h := range hs {
			if h.acquired < d {
				r.PerWorker[w]++
				r.Ops++
			}
		}
		r.Errors += errs[w]
	}
	slices.SortFunc(all, func(a, b holding) int { return int(a.acquired - b.acquired) })
	for i := 1; i < len(all); i++ {
		h := all[i].acquired - all[i-1].released
		if h < 0 {
			r.Overlaps++
			continue
		}
		r.Durations = append(r.Durations, h)
		if all[i].worker != all[i-1].worker {
			r.Cross = append(r.Cross, h)
		}
	}
	if r.Ops == 0 {
		return r, errors.Join(fmt.Errorf("%s: no acquisition in %v", name, d), firstErr)
	}
	return r, nil
}

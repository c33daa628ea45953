package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The writer among readers as pkg/lock's BenchmarkWriterAmongReaders has
// it: 16 readers, and writes 5 ms apart, so that the readers have the key
// between writes and every write finds reads in progress.
const (
	Readers   = 16
	WriterGap = 5 * time.Millisecond
)

// WriterAmongReaders runs n readers (readers.Worker(0) to (n-1)) that take
// key, hold it for hold and give it back, back to back, and one writer
// (writer.Worker(0)) that does the same and then pauses gap before its
// next write, for d or until limit writes (limit > 0: testing.B's b.N).
// The readers' library takes key shared and the writer's exclusively
// (WriterLibs): the measure is how long the writer waits among them. Of
// the Run, Durations are the writer's waits, from calling its lock to its
// return; Ops is every completed cycle, reads and writes; PerWorker each
// reader's cycles, then the writer's; Wall runs until the writer stopped;
// Overlaps counts the holds that began while one they exclude was held
// (must be 0); Errors the failed calls the run's end did not cut off.
func WriterAmongReaders(ctx context.Context, readers, writer *Lib, n int, hold, gap, d time.Duration, limit int, key string) (Run, error) {
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	readCtx, stopReads := context.WithCancel(runCtx)
	defer stopReads()
	lockfs := make([]LockFunc, n+1)
	for g := range n {
		lockfs[g] = readers.Worker(g)
	}
	lockfs[n] = writer.Worker(0)
	per := make([][]holding, n+1)
	fails := newFailures(n + 1)
	base := time.Now()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			for readCtx.Err() == nil {
				h, held, err := turn(readCtx, lockfs[g], key, g, hold, base)
				fails.note(readCtx, g, held, err)
				if held {
					per[g] = append(per[g], h)
				}
			}
		})
	}
	var waits []time.Duration
	for runCtx.Err() == nil {
		asked := time.Since(base)
		h, held, err := turn(runCtx, lockfs[n], key, n, hold, base)
		fails.note(runCtx, n, held, err)
		if held {
			per[n] = append(per[n], h)
			waits = append(waits, h.acquired-asked)
		}
		if (limit > 0 && len(waits) >= limit) || sleep(runCtx, gap) != nil {
			break
		}
	}
	wall := time.Since(base)
	stopReads()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	r := Run{Durations: waits, Wall: wall, PerWorker: make([]int, n+1)}
	var reads []holding
	for g, hs := range per {
		r.PerWorker[g] = len(hs)
		r.Ops += len(hs)
		r.Errors += fails.n[g]
		if g < n {
			reads = append(reads, hs...)
		}
	}
	r.Overlaps = conflicts(per[n], reads)
	// No read is not a failure: a run of one write (testing.B's first) can end
	// before any reader's first turn. Failed reads are in Errors.
	if len(waits) == 0 {
		return r, errors.Join(fmt.Errorf("%s: no write in %v", writer.Name, d), fails.first)
	}
	return r, nil
}

// ReadRate is a WriterAmongReaders run's reads per second: every cycle but
// the writer's, which is the last worker.
func ReadRate(r Run) float64 {
	if r.Wall <= 0 || len(r.PerWorker) == 0 {
		return 0
	}
	return float64(r.Ops-r.PerWorker[len(r.PerWorker)-1]) / r.Wall.Seconds()
}

// conflicts counts the holds that began while a hold they exclude was
// held: a write during a read or another write, a read during a write.
// A holding runs from its lock's return to its release's start, inside the
// real hold, so each one counted is a real breach.
func conflicts(writes, reads []holding) int {
	type hold struct {
		holding
		write bool
	}
	all := make([]hold, 0, len(writes)+len(reads))
	for _, h := range writes {
		all = append(all, hold{h, true})
	}
	for _, h := range reads {
		all = append(all, hold{h, false})
	}
	slices.SortFunc(all, func(a, b hold) int { return cmp.Compare(a.acquired, b.acquired) })
	n := 0
	var readUntil, writeUntil time.Duration // the latest end of a read, of a write, begun so far
	for _, h := range all {
		if writeUntil > h.acquired || (h.write && readUntil > h.acquired) {
			n++
		}
		if h.write {
			writeUntil = max(writeUntil, h.released)
		} else {
			readUntil = max(readUntil, h.released)
		}
	}
	return n
}

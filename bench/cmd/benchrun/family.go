package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/bench"
)

// familyResults are the lock family scenario's rows (issue 44).
type familyResults struct {
	shared []row // Level = goroutines: the exclusive cycle and the shared one
	keys   []row // Level = keys a cycle takes, at one goroutine
	writer []row // Level = readers: the writer's waits among them
}

// runFamily measures the lock family: the shared and exclusive cycles at
// every concurrency, as the uncontended scenario's; the multi-key cycles
// at one goroutine, where a cycle's time is its round trips and scripts
// rather than the server's queue; and a writer among readers.
func runFamily(ctx context.Context, s settings, cnt *counter, client func() *redis.Client) (familyResults, error) {
	var f familyResults
	libs, err := bench.SharedLibs(client, s.ttl)
	if err != nil {
		return f, err
	}
	f.shared, err = runLatency(ctx, s, cnt, "family:shared", libs, s.concurrency, s.uncontended)
	bench.CloseAll(libs)
	if err != nil {
		return f, err
	}
	for _, n := range s.familyKeys {
		rows, err := runKeys(ctx, s, cnt, client, n)
		if err != nil {
			return f, err
		}
		f.keys = append(f.keys, rows...)
	}
	f.writer, err = runWriter(ctx, s, cnt, client)
	return f, err
}

// runKeys is the rows that take n keys a cycle (bench.KeysLibs), at one
// goroutine; their Level is n, the table's.
func runKeys(ctx context.Context, s settings, cnt *counter, client func() *redis.Client, n int) ([]row, error) {
	libs, err := bench.KeysLibs(client, s.ttl, n)
	if err != nil {
		return nil, err
	}
	defer bench.CloseAll(libs)
	rows, err := runLatency(ctx, s, cnt, fmt.Sprintf("family:keys%d", n), libs, []int{1}, s.uncontended)
	for i := range rows {
		rows[i].Level = n
	}
	return rows, err
}

// runWriter is the writer among bench.Readers readers, one row whose
// Level is the readers.
func runWriter(ctx context.Context, s settings, cnt *counter, client func() *redis.Client) ([]row, error) {
	readers, writer, err := bench.WriterLibs(client, s.ttl)
	if err != nil {
		return nil, err
	}
	defer bench.CloseAll([]*bench.Lib{readers, writer})
	// Every reader's Locker made and its scripts loaded before the clock runs.
	if err := warm(ctx, readers, bench.Readers, "family:readers"); err != nil {
		return nil, err
	}
	if err := warm(ctx, writer, 1, "family:writer"); err != nil {
		return nil, err
	}
	var r bench.Run
	var load bench.Load
	for round := range s.rounds {
		progress("family: a writer among %d readers, round %d/%d", bench.Readers, round+1, s.rounds)
		one, l, err := cnt.measure(ctx, func() (bench.Run, error) {
			return bench.WriterAmongReaders(ctx, readers, writer, bench.Readers, s.hold, bench.WriterGap, s.amongReaders, 0, fmt.Sprintf("family:rw:%d", round))
		})
		if err != nil {
			return nil, err
		}
		r.Merge(one)
		load = load.Add(l)
	}
	return []row{{Name: writer.Name, Family: writer.Family, Tuning: writer.Tuning, Level: bench.Readers, Run: r, Lat: bench.Summarize(r.Durations), Load: load}}, nil
}

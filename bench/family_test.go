package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// TestKeysOf: a multi-key cycle's keys are sorted, distinct and in one
// hash slot, as TryAcquireAll needs them on a Cluster.
func TestKeysOf(t *testing.T) {
	for _, n := range []int{1, 2, 8, 12} {
		keys := keysOf("family:keys:0", n)
		if len(keys) != n || !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != n {
			t.Errorf("keysOf(%d) = %q: want %d distinct keys, sorted", n, keys, n)
		}
		for _, k := range keys {
			if protocol.KeySlot(k) != protocol.KeySlot(keys[0]) {
				t.Errorf("keysOf(%d): %q and %q are in different slots", n, keys[0], k)
			}
		}
	}
}

// TestConflicts: a write that begins during a read or a write, or a read
// during a write, counts; reads together, and holds that only touch, do
// not.
func TestConflicts(t *testing.T) {
	h := func(acquired, released time.Duration) holding { return holding{acquired: acquired, released: released} }
	for _, tc := range []struct {
		name          string
		writes, reads []holding
		want          int
	}{
		{"apart", []holding{h(0, 10), h(30, 40)}, []holding{h(10, 20), h(12, 30)}, 0},
		{"reads overlap each other", nil, []holding{h(0, 10), h(5, 15), h(6, 7)}, 0},
		{"a read begins during a write", []holding{h(0, 10)}, []holding{h(9, 20)}, 1},
		{"a write begins during a read", []holding{h(5, 10)}, []holding{h(0, 6)}, 1},
		{"a write begins during a read that is not the latest", []holding{h(50, 60)}, []holding{h(0, 100), h(10, 20)}, 1},
		{"a write begins during a write", []holding{h(0, 10), h(5, 15)}, nil, 1},
		{"every read inside a write", []holding{h(0, 100)}, []holding{h(10, 20), h(30, 40)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := conflicts(tc.writes, tc.reads); got != tc.want {
				t.Errorf("conflicts = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestFamilySmoke runs every lock family row for a moment against a real
// redis-server, and a writer among readers for a few writes: the rows work
// and a write never overlaps a read.
func TestFamilySmoke(t *testing.T) {
	srv := singleServer(t)
	ctx := context.Background()
	newClient := func() *redis.Client { return clients(t, srv)()[0] }

	libs, err := SharedLibs(newClient, benchTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(libs)
	for _, n := range []int{2, 8} {
		kl, err := KeysLibs(newClient, benchTTL, n)
		if err != nil {
			t.Fatal(err)
		}
		defer CloseAll(kl)
		libs = append(libs, kl...)
	}
	for _, lib := range libs {
		r, err := Uncontended(ctx, lib, 2, 30*time.Millisecond, keyName("smoke:family:", lib.Name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 {
			t.Errorf("%s: no cycle completed", lib.Name)
		}
	}

	readers, writer, err := WriterLibs(newClient, benchTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll([]*Lib{readers, writer})
	r, err := WriterAmongReaders(ctx, readers, writer, 4, time.Millisecond, WriterGap, 10*time.Second, 10, "smoke:family:rw")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Durations) != 10 || r.PerWorker[4] != 10 || r.Overlaps != 0 || r.Errors != 0 || ReadRate(r) <= 0 {
		t.Errorf("writes %d (want 10), writer's cycles %d, overlaps %d, errors %d, reads/s %.0f", len(r.Durations), r.PerWorker[4], r.Overlaps, r.Errors, ReadRate(r))
	}
}

// TestOneByOneGivesBackWhatItTook: when a later key is held, a one-by-one
// cycle fails and leaves the keys it had taken free.
func TestOneByOneGivesBackWhatItTook(t *testing.T) {
	srv := singleServer(t)
	ctx := context.Background()
	newClient := func() *redis.Client { return clients(t, srv)()[0] }
	libs, err := KeysLibs(newClient, benchTTL, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(libs)
	other, err := lock.New(newClient(), familyOptions(benchTTL)...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	keys := keysOf("smoke:family:give-back", 3)
	held, err := other.TryAcquire(ctx, keys[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs[1:] { // the one-by-one rows
		// The peers retry a held key until ctx ends: the give-back must
		// outlive it.
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := lib.Worker(0)(tctx, "smoke:family:give-back")
		cancel()
		if err == nil {
			t.Fatalf("%s: took %q, which another Locker holds", lib.Name, keys[1])
		}
		first, err := other.TryAcquire(ctx, keys[0])
		if err != nil {
			t.Fatalf("%s left %q taken: %v", lib.Name, keys[0], err)
		}
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

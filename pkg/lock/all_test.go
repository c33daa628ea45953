package lock_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TryAcquireAll takes every key or none: with one key held by another
// process it fails naming that key, and the free key stays free; once
// the other lets go it takes both, each with a fence above every fence
// its key had, and its release frees both.
func TestTryAcquireAllTakesEveryKeyOrNone(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	ls := separateLockers(t, srv.Addr(), 2)
	other, err := ls[1].TryAcquire(ctx, "credit")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ls[0].TryAcquireAll(ctx, "debit", "credit")
	var na *lock.NotAcquiredError
	if !errors.As(err, &na) || na.Key != "credit" || na.HolderTTL <= 0 {
		t.Fatalf("TryAcquireAll = %v, want NotAcquiredError for credit with its TTL", err)
	}
	if n := admin.Exists(ctx, "debit").Val(); n != 0 {
		t.Fatal("the free key was taken although the other was held")
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := ls[0].TryAcquireAll(ctx, "debit", "credit")
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Fences(); len(f) != 2 || f[1] <= other.Fence() || f[0] == 0 {
		t.Fatalf("fences %v, want one per key, credit's above %d", f, other.Fence())
	}
	for i, key := range []string{"debit", "credit"} {
		if got := m.Leases()[i].Key(); got != key {
			t.Fatalf("lease %d is of %q, want %q", i, got, key)
		}
		if v := admin.Get(ctx, key).Val(); v != m.Leases()[i].Value() {
			t.Fatalf("%s holds another value than its lease's", key)
		}
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(ctx, "debit", "credit").Val(); n != 0 {
		t.Fatalf("%d keys left after Release", n)
	}
	if !errors.Is(m.Err(), lock.ErrReleased) {
		t.Fatalf("Err after Release = %v, want ErrReleased", m.Err())
	}
}

// Under FIFO a free key whose line holds a waiter is not free: it goes to
// the head of its line, and TryAcquireAll takes none of the keys.
func TestTryAcquireAllLeavesAFIFOKeyToItsLine(t *testing.T) {
	_, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	fifo := newLocker(t, admin, lock.WithFIFO())
	var na *lock.NotAcquiredError
	if err := admin.ZAdd(ctx, protocol.LineKey("credit"), redis.Z{Score: 1, Member: "waiter:1/" + strings.Repeat("0", 40)}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := fifo.TryAcquireAll(ctx, "debit", "credit"); !errors.As(err, &na) || na.Key != "credit" {
		t.Fatalf("FIFO TryAcquireAll with a waiter in credit's line = %v, want not acquired on credit", err)
	}
	if n := admin.Exists(ctx, "debit").Val(); n != 0 {
		t.Fatal("FIFO: the free key was taken although the other's line had a waiter")
	}
}

// Two processes take {a, b} and {b, a}, 5,000 times each, while a third
// reads both keys in one MULTI as fast as it can: it never sees one key
// held without the other, or the two held by different values, and both
// takers get their turns (no deadlock: nobody holds part of the set while
// it waits for the rest).
func TestTryAcquireAllNeverShowsAPartialHold(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 120*time.Second)
	ls := separateLockers(t, srv.Addr(), 2, lock.WithoutWatchdog())
	const rounds = 5000
	var (
		done           atomic.Bool
		partial, reads atomic.Int64
		got            [2]atomic.Int64
		reader, takers sync.WaitGroup
	)
	reader.Go(func() {
		for !done.Load() {
			cmds, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, "a")
				p.Get(ctx, "b")
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Error(err)
				return
			}
			if cmds[0].(*redis.StringCmd).Val() != cmds[1].(*redis.StringCmd).Val() {
				partial.Add(1)
			}
			reads.Add(1)
		}
	})
	for i, keys := range [][]string{{"a", "b"}, {"b", "a"}} {
		takers.Go(func() {
			for range rounds {
				m, err := ls[i].TryAcquireAll(ctx, keys...)
				if errors.Is(err, lock.ErrNotAcquired) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				got[i].Add(1)
				if err := m.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	takers.Wait()
	done.Store(true)
	reader.Wait()
	if partial.Load() != 0 {
		t.Fatalf("%d of %d reads saw one key held without the other", partial.Load(), reads.Load())
	}
	if got[0].Load() == 0 || got[1].Load() == 0 || reads.Load() < 100 {
		t.Fatalf("acquisitions %d and %d, %d reads: want both takers served while the reader reads", got[0].Load(), got[1].Load(), reads.Load())
	}
	t.Logf("acquisitions %d and %d of %d tries each; %d reads, none partial", got[0].Load(), got[1].Load(), rounds, reads.Load())
}

// A MultiLease ends as a whole when one key's lease is lost: another
// client takes "b" after it was deleted under the holder; the watchdog's
// renewal of b finds it gone, the MultiLease's Done closes with
// ErrLeaseLost, and "a" is given back, free for the next taker, whose
// fence on each key is above the lost holder's.
func TestAMultiLeaseEndsWhenAnyKeyIsLost(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	ls := separateLockers(t, srv.Addr(), 2, lock.WithTTL(600*time.Millisecond))
	m, err := ls[0].TryAcquireAll(ctx, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	lost := m.Fences()
	if err := admin.Del(ctx, "b").Err(); err != nil {
		t.Fatal(err)
	}
	successor, err := ls[1].TryAcquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the MultiLease outlived its lost key by more than two TTLs")
	}
	if !errors.Is(m.Err(), lock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", m.Err())
	}
	waitFor(t, 2*time.Second, "a to be given back", func() bool { return admin.Exists(ctx, "a").Val() == 0 })
	next, err := ls[1].TryAcquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if next.Fence() <= lost[0] || successor.Fence() <= lost[1] {
		t.Fatalf("successors' fences %d, %d, want above the lost holder's %v", next.Fence(), successor.Fence(), lost)
	}
}

// TryAcquireAll refuses what it cannot take atomically, with
// ErrInvalidConfig (or ErrKeysAcrossSlots) and without a round trip.
func TestTryAcquireAllRefusesWhatItCannotTakeAtomically(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	plain := newLocker(t, client)
	redlock, err := lock.NewRedlock([]redis.UniversalClient{client, redistest.StartStandalone(t).Client(t),
		redistest.StartStandalone(t).Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, redlock)
	many := make([]string, lock.MaxAllKeys+1)
	for i := range many {
		many[i] = "k" + strings.Repeat("x", i)
	}
	cluster := newLocker(t, redistest.StartCluster(t).Client(t))
	tests := []struct {
		name string
		l    *lock.Locker
		keys []string
		want error
	}{
		{"no keys", plain, nil, lock.ErrInvalidConfig},
		{"a key twice", plain, []string{"a", "b", "a"}, lock.ErrInvalidConfig},
		{"too many keys", plain, many, lock.ErrInvalidConfig},
		{"Redlock", redlock, []string{"a", "b"}, lock.ErrInvalidConfig},
		{"Cluster, two slots", cluster, []string{"a", "b"}, lock.ErrKeysAcrossSlots},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.l.TryAcquireAll(ctx, tt.keys...); !errors.Is(err, tt.want) {
				t.Fatalf("TryAcquireAll = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("Cluster, one hash tag", func(t *testing.T) {
		m, err := cluster.TryAcquireAll(ctx, "{order-42}:debit", "{order-42}:credit")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A MultiLease's release hands each key to the first waiter in its line,
// as a single key's release does: two processes waiting for one key each
// get theirs within 250 ms of the one release (expected: a round trip and
// a notice).
func TestAMultiLeaseReleaseHandsEachKeyToItsWaiter(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	ls := separateLockers(t, srv.Addr(), 3, lock.WithTTL(10*time.Second))
	m, err := ls[0].TryAcquireAll(ctx, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	gotA := acquireInBackground(ctx, t, ls[1], "a")
	gotB := acquireInBackground(ctx, t, ls[2], "b")
	waitFor(t, 2*time.Second, "both waiters to queue", func() bool {
		return admin.ZCard(ctx, protocol.LineKey("a")).Val() == 1 && admin.ZCard(ctx, protocol.LineKey("b")).Val() == 1
	})
	released := time.Now()
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expectHandoff(t, gotA, released, 250*time.Millisecond, 5*time.Second, "a's waiter got it late", "a's waiter never got it")
	expectHandoff(t, gotB, released, 250*time.Millisecond, 5*time.Second, "b's waiter got it late", "b's waiter never got it")
}

// Under WithReplicaAck, keys taken on a master no replica acknowledged
// are given back, all of them: TryAcquireAll returns ErrNotReplicated and
// both keys are free.
func TestTryAcquireAllGivesBackWhatWasNotReplicated(t *testing.T) {
	_, admin := startRedis(t) // no replica: WAIT 1 times out with 0
	ctx := ctxTimeout(t, 30*time.Second)
	l := newLocker(t, admin, lock.WithReplicaAck(1, 100*time.Millisecond))
	if _, err := l.TryAcquireAll(ctx, "a", "b"); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("TryAcquireAll = %v, want ErrNotReplicated", err)
	}
	if n := admin.Exists(ctx, "a", "b").Val(); n != 0 {
		t.Fatalf("%d keys left held after an unreplicated acquisition", n)
	}
}

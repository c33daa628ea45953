package lock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The failover quarantine's timings: a short TTL and cutoff keep each case
// near one second.
const (
	quarantineTTL    = time.Second
	quarantineCutoff = 200 * time.Millisecond
)

// quarantined is the option under test; missing chooses what a key without
// an epoch record means.
func quarantined(missing lock.MissingEpoch) []lock.Option {
	return []lock.Option{lock.WithTTL(quarantineTTL), lock.WithFailoverQuarantine(quarantineCutoff, missing)}
}

// quarantineLength is how long lua/epoch.lua holds grants back after a
// failover of a key granted for quarantineTTL.
func quarantineLength() time.Duration {
	return protocol.Quarantine{Cutoff: quarantineCutoff}.Length(quarantineTTL)
}

// leaseStart is when l's successful attempt was sent: its validity counts
// from there (ttl less the default drift allowance, 1 % + 2 ms).
func leaseStart(l *lock.Lease, ttl time.Duration) time.Time {
	return l.ValidUntil().Add(-ttl + time.Duration(float64(ttl)*lock.DefaultDriftFactor) + 2*time.Millisecond)
}

// recordEpoch writes key's epoch record ahead of first use, as the
// controller does for the locks it declares (protocol.RecordEpoch), and
// with replicated set waits until a replica has it: the record of an
// earlier use, which survives a failover.
func recordEpoch(ctx context.Context, t *testing.T, client *redis.Client, key string, replicated bool) {
	t.Helper()
	q := protocol.Quarantine{On: true, Cutoff: quarantineCutoff}
	if _, err := protocol.RecordEpoch(ctx, protocol.Scripts(client), key, quarantineTTL, q); err != nil {
		t.Fatal(err)
	}
	if !replicated {
		return
	}
	if n, err := client.Wait(ctx, 1, 5000).Result(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 = %d, %v: the epoch record did not reach the replica", n, err)
	}
}

// secondHolder is what happens on the promoted replica right after a
// failover that lost first's key: TryAcquire, Inspect, then Acquire. It
// returns the second lease and the quarantine TryAcquire reported, which
// Inspect must show too.
func secondHolder(ctx context.Context, t *testing.T, client *redis.Client, opts []lock.Option) (*lock.Lease, time.Duration) {
	t.Helper()
	reg := prometheus.NewRegistry()
	b := newLocker(t, client, append(opts, lock.WithMetrics(reg))...)
	var quarantine time.Duration
	second, err := b.TryAcquire(ctx, "job")
	var na *lock.NotAcquiredError
	switch {
	case errors.As(err, &na):
		quarantine = na.Quarantine
		if h, err := b.Inspect(ctx, "job"); err != nil || (h.Quarantine > 0) != (quarantine > 0) || h.Quarantine > quarantine {
			t.Fatalf("Inspect = %+v, %v: want the quarantine TryAcquire reported (%v), or less", h, err, quarantine)
		}
		if second, err = b.Acquire(ctx, "job"); err != nil {
			t.Fatal(err)
		}
		if n := counterSum(t, reg, "redlease_lock_quarantined_attempts_total"); (n > 0) != (quarantine > 0) {
			t.Fatalf("redlease_lock_quarantined_attempts_total = %v after a quarantine of %v", n, quarantine)
		}
	case err != nil:
		t.Fatal(err)
	}
	releaseAtEnd(t, second)
	return second, quarantine
}

// An asynchronous failover that loses a held key, with and without the
// quarantine. Without it, the promoted replica grants the key at once while
// the first holder's lease still runs (the naive variant: two holders).
// With it, the promoted replica sees another server than the key's epoch
// record names and grants nothing until the first lease has ended. A key
// whose record was lost with it (first used after the replica stopped
// receiving writes) is quarantined too under MissingEpochWaits, and goes
// unnoticed under MissingEpochIsNew (asserted: that is the option's
// documented cost).
func TestFailoverQuarantine(t *testing.T) {
	// record: when the key's epoch record is written before first use —
	// before the replica is cut off (it survives the failover), after
	// (it is lost with the key), or never (the first acquisition writes
	// it, and it is lost with the key).
	const (
		recordReplicated = iota
		recordLost
		recordNone
	)
	tests := []struct {
		name    string
		opts    []lock.Option
		record  int
		overlap bool
	}{
		{"no quarantine: two holders", []lock.Option{lock.WithTTL(quarantineTTL)}, recordReplicated, true},
		{"quarantine: the key waits out the first lease", quarantined(lock.MissingEpochWaits), recordReplicated, false},
		{"quarantine: a record lost with its key waits", quarantined(lock.MissingEpochWaits), recordLost, false},
		{"quarantine, missing record is new: two holders", quarantined(lock.MissingEpochIsNew), recordNone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := redistest.StartReplicated(t, 1)
			ctx := ctxTimeout(t, 30*time.Second)
			if tt.record == recordReplicated {
				recordEpoch(ctx, t, g.Master.Client(t), "job", true)
			}
			a := lockerOnDoomedMaster(t, g.Master.Client(t), tt.opts...)
			isolateReplica(t, g)
			if tt.record == recordLost {
				recordEpoch(ctx, t, g.Master.Client(t), "job", false)
			}
			first, err := a.TryAcquire(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			failOver(t, g)
			promoted := time.Now()
			second, quarantine := secondHolder(ctx, t, g.Replicas[0].Client(t), tt.opts)
			waited := time.Since(promoted)
			overlap := leaseStart(second, quarantineTTL).Before(first.ValidUntil())
			t.Logf("second lease after %v (quarantine reported %v, rule %v); overlap with the first: %v",
				waited.Round(time.Millisecond), quarantine, quarantineLength(), overlap)
			if overlap != tt.overlap {
				t.Fatalf("overlap = %v, want %v: first valid until %v, second from %v", overlap, tt.overlap,
					first.ValidUntil().Format(time.StampMicro), leaseStart(second, quarantineTTL).Format(time.StampMicro))
			}
			if !tt.overlap && (quarantine <= 0 || quarantine > quarantineLength() || waited > quarantineLength()+2*time.Second) {
				t.Fatalf("quarantine %v, waited %v: want a quarantine of at most %v, waited out and no longer (+2 s)",
					quarantine, waited, quarantineLength())
			}
		})
	}
}

// A semaphore's permits across the same failover: both permits of 2 are
// held on the master and lost with it. Without the quarantine the promoted
// replica grants a permit at once: three holders of two permits (the naive
// variant). With it, the permit waits until both lost leases have ended.
func TestFailoverQuarantineOfASemaphore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    []lock.Option
		overlap bool
	}{
		{"no quarantine: three holders of two permits", []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"quarantine", quarantined(lock.MissingEpochWaits), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := redistest.StartReplicated(t, 1)
			ctx := ctxTimeout(t, 30*time.Second)
			recordEpoch(ctx, t, g.Master.Client(t), "permits", true)
			a := lockerOnDoomedMaster(t, g.Master.Client(t), tt.opts...)
			isolateReplica(t, g)
			var firstEnds time.Time
			for range 2 {
				lease, err := a.Semaphore("permits", 2).TryAcquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				firstEnds = lease.ValidUntil()
			}
			failOver(t, g)
			b := newLocker(t, g.Replicas[0].Client(t), tt.opts...)
			third, err := b.Semaphore("permits", 2).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, third)
			overlap := leaseStart(third, quarantineTTL).Before(firstEnds)
			if overlap != tt.overlap {
				t.Fatalf("the third permit overlaps the lost two: %v, want %v", overlap, tt.overlap)
			}
		})
	}
}

// Shared holds across the same failover: a hold of one kind is lost with
// the master, and the promoted replica is asked for the other kind. A
// promotion that lost a shared hold grants no exclusive hold (and one that
// lost the exclusive hold no shared hold) until the lost lease has ended;
// without the quarantine the two overlap (the naive variant).
func TestFailoverQuarantineOfSharedHolds(t *testing.T) {
	shared := func(l *lock.Locker, ctx context.Context) (*lock.Lease, error) { return l.AcquireShared(ctx, "rw") }
	exclusive := func(l *lock.Locker, ctx context.Context) (*lock.Lease, error) { return l.Acquire(ctx, "rw") }
	failOverBetween(t, []string{"rw"}, []failoverRow{
		{"shared lost, no quarantine: a writer beside the reader", shared, exclusive, []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"shared lost, quarantine", shared, exclusive, quarantined(lock.MissingEpochWaits), false},
		{"exclusive lost, no quarantine: a reader beside the writer", exclusive, shared, []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"exclusive lost, quarantine", exclusive, shared, quarantined(lock.MissingEpochWaits), false},
	})
}

// failoverRow is a lease lost with a master (lost, taken on it) and one
// asked of the promoted replica (taken), under opts; overlap says whether
// the second may begin before the first's validity ends.
type failoverRow struct {
	name        string
	lost, taken func(*lock.Locker, context.Context) (*lock.Lease, error)
	opts        []lock.Option
	overlap     bool
}

// failOverBetween runs each row on a master and a replica of its own: the
// keys' epoch records replicated, the replica cut off, the first lease
// taken on the master, which is then killed and the replica promoted, and
// the second lease taken there.
func failOverBetween(t *testing.T, keys []string, rows []failoverRow) {
	t.Helper()
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			g := redistest.StartReplicated(t, 1)
			ctx := ctxTimeout(t, 30*time.Second)
			for _, k := range keys {
				recordEpoch(ctx, t, g.Master.Client(t), k, true)
			}
			a := lockerOnDoomedMaster(t, g.Master.Client(t), tt.opts...)
			isolateReplica(t, g)
			first, err := tt.lost(a, ctx)
			if err != nil {
				t.Fatal(err)
			}
			failOver(t, g)
			second, err := tt.taken(newLocker(t, g.Replicas[0].Client(t), tt.opts...), ctx)
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, second)
			if overlap := leaseStart(second, quarantineTTL).Before(first.ValidUntil()); overlap != tt.overlap {
				t.Fatalf("the second lease overlaps the lost one: %v, want %v", overlap, tt.overlap)
			}
		})
	}
}

// A restart that loses writes: the server's RDB was saved before the last
// grant, the server is killed and starts from it. The restarted server has
// a new run ID: the key is quarantined, where without the quarantine it is
// granted again at once.
func TestQuarantineAfterARestartThatLostWrites(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    []lock.Option
		overlap bool
	}{
		{"no quarantine: two holders", []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"quarantine", quarantined(lock.MissingEpochWaits), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			ctx := ctxTimeout(t, 30*time.Second)
			client := srv.Client(t)
			a := lockerOnDoomedMaster(t, client, tt.opts...)
			recordEpoch(ctx, t, client, "job", false)
			if err := client.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			first, err := a.TryAcquire(ctx, "job") // after the save: lost by the restart
			if err != nil {
				t.Fatal(err)
			}
			srv.Kill()
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			second, quarantine := secondHolder(ctx, t, srv.Client(t), tt.opts)
			overlap := leaseStart(second, quarantineTTL).Before(first.ValidUntil())
			t.Logf("quarantine reported %v; overlap: %v", quarantine, overlap)
			if overlap != tt.overlap {
				t.Fatalf("overlap = %v, want %v", overlap, tt.overlap)
			}
		})
	}
}

// A master's replication ID also changes without a failover: when it
// creates its replication backlog, as its first replica attaches. That
// false alarm (same run ID, no replid2) is recognised and costs nothing.
// A failover and back (A promoted again after B) keeps A's run ID but
// gives it a new replication ID with B's as replid2: quarantined.
func TestQuarantineTellsABacklogFromAFailoverAndBack(t *testing.T) {
	opts := quarantined(lock.MissingEpochWaits)
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("first replica attaches: no quarantine", func(t *testing.T) {
		nodes := redistest.StartNodes(t, 2)
		master := nodes[0]
		recordEpoch(ctx, t, master.Client(t), "job", false)
		before := replID(ctx, t, master)
		if err := nodes[1].Client(t).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(master.Port())).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the master's new replication ID", func() bool { return replID(ctx, t, master) != before })
		l := newLocker(t, master.Client(t), opts...)
		lease, err := l.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatalf("TryAcquire after the backlog was created: %v, want no quarantine", err)
		}
		releaseAtEnd(t, lease)
	})

	t.Run("failover and back: quarantine", func(t *testing.T) {
		g := redistest.StartReplicated(t, 1)
		a, b := g.Master, g.Replicas[0]
		recordEpoch(ctx, t, a.Client(t), "job", true)
		switchMaster(ctx, t, b, a)
		switchMaster(ctx, t, a, b)
		l := newLocker(t, a.Client(t), opts...)
		_, err := l.TryAcquire(ctx, "job")
		var na *lock.NotAcquiredError
		if !errors.As(err, &na) || na.Quarantine <= 0 {
			t.Fatalf("TryAcquire on A after A -> B -> A = %v, want a quarantine", err)
		}
	})
}

// switchMaster promotes to and makes from its replica, once to has every
// write from.
func switchMaster(ctx context.Context, t *testing.T, to, from *redistest.Server) {
	t.Helper()
	if err := from.Client(t).Wait(ctx, 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := to.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := from.Client(t).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(to.Port())).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, from.String()+" replicating "+to.String(), func() bool {
		info, err := from.Info(ctx, "replication")
		return err == nil && info["master_link_status"] == "up"
	})
}

func replID(ctx context.Context, t *testing.T, s *redistest.Server) string {
	t.Helper()
	info, err := s.Info(ctx, "replication")
	if err != nil {
		t.Fatal(err)
	}
	return info["master_replid"]
}

// The quarantine assumes one TTL per key: after a failover that lost the
// key's epoch record with it, it can wait only for the TTL its next caller
// brings. A Locker whose TTL differs from the one the record holds says
// so, once per Acquire call, in a log line and
// redlease_lock_mixed_ttl_attempts_total; a Locker with the recorded TTL
// says nothing.
func TestAMixedTTLIsReported(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ttl   time.Duration
		mixed bool
	}{
		{"the recorded TTL", quarantineTTL, false},
		{"a longer TTL", 3 * quarantineTTL, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, admin := startRedis(t)
			ctx := ctxTimeout(t, 30*time.Second)
			recordEpoch(ctx, t, admin, "job", false)
			holder := newLocker(t, srv.Client(t), quarantined(lock.MissingEpochWaits)...)
			lease, err := holder.TryAcquire(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, lease)

			reg := prometheus.NewRegistry()
			var mu sync.Mutex
			var lines []string
			logger := funcr.New(func(_, args string) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, args)
			}, funcr.Options{})
			opts := append(quarantined(lock.MissingEpochWaits), lock.WithTTL(tt.ttl), lock.WithMetrics(reg), lock.WithLogger(logger))
			waiter := newLocker(t, srv.Client(t), opts...)
			wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond) // two attempts or more
			defer cancel()
			if _, err := waiter.Acquire(wctx, "job"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire on a held key = %v, want the deadline", err)
			}
			n := counterSum(t, reg, "redlease_lock_mixed_ttl_attempts_total")
			mu.Lock()
			warnings := 0
			for _, l := range lines {
				if strings.Contains(l, "another TTL") && strings.Contains(l, `"recordedTTL"="1s"`) {
					warnings++
				}
			}
			mu.Unlock()
			if tt.mixed && (n < 2 || warnings != 1) {
				t.Fatalf("mixed TTLs: %v attempts counted, %d warnings; want every attempt counted (2 or more) and one warning", n, warnings)
			}
			if !tt.mixed && (n != 0 || warnings != 0) {
				t.Fatalf("one TTL: %v attempts counted, %d warnings; want none", n, warnings)
			}
		})
	}
}

// The failover quarantine covers keys taken together: a promotion that
// lost a set taken with TryAcquireAll grants none of its keys alone, and
// one that lost a single key grants no set that includes it, before the
// lost lease has ended; without the quarantine the second holder overlaps
// the first at once.
func TestFailoverQuarantineOfKeysTakenTogether(t *testing.T) {
	together := func(l *lock.Locker, ctx context.Context) (*lock.Lease, error) {
		m, err := l.AcquireAll(ctx, "debit", "credit")
		if err != nil {
			return nil, err
		}
		return m.Leases()[1], nil // credit's: both share the set's start
	}
	alone := func(l *lock.Locker, ctx context.Context) (*lock.Lease, error) { return l.Acquire(ctx, "credit") }
	failOverBetween(t, []string{"debit", "credit"}, []failoverRow{
		{"set lost, no quarantine: a holder of one key beside it", together, alone, []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"set lost, quarantine", together, alone, quarantined(lock.MissingEpochWaits), false},
		{"one key lost, no quarantine: a set beside it", alone, together, []lock.Option{lock.WithTTL(quarantineTTL)}, true},
		{"one key lost, quarantine", alone, together, quarantined(lock.MissingEpochWaits), false},
	})
}

package lock_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// roundTrips counts the requests a client sends: one per command sent
// alone, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// 200 leases acquired together renew together: the watchdog sends the
// renewals that come due within a millisecond in one pipeline, so their
// round trips are a small fraction of the renewals (one per lease and
// renewal before: 200 leases renewing 5 times made 1,000).
func TestRenewalsDueTogetherShareARoundTrip(t *testing.T) {
	srv, _ := startRedis(t)
	client := srv.Client(t)
	hook := &roundTrips{}
	client.AddHook(hook)
	reg := prometheus.NewRegistry()
	l := newLocker(t, client, lock.WithTTL(600*time.Millisecond), lock.WithRenewInterval(100*time.Millisecond), lock.WithMetrics(reg))
	ctx := ctxTimeout(t, 30*time.Second)
	const leases = 200
	for i := range leases {
		lease, err := l.TryAcquire(ctx, "batched/"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, lease)
	}
	before := hook.n.Load()
	time.Sleep(time.Second)
	trips := hook.n.Load() - before
	renewed := counterValue(t, reg, "redlease_lock_renewals_total", "ok")
	t.Logf("%.0f renewals in %d round trips", renewed, trips)
	if renewed < leases*5 {
		t.Fatalf("only %.0f renewals of %d leases in 1s at a 100ms interval", renewed, leases)
	}
	if float64(trips) > renewed/4 { // 20 renewals per round trip measured, 10 under -race
		t.Fatalf("%d round trips for %.0f renewals: renewals due together were sent one by one", trips, renewed)
	}
}

// Leases taken at different moments each renew on their own schedule, on
// one Redis and on Redlock nodes (renewed one by one there): sampled every
// 20 ms for 1.5 s, no lease's remaining validity ever falls far below the
// TTL (1 s, renewed every 100 ms: about 0.9 s expected; a watchdog that
// renewed late, or only when the first lease came due, lets it drop toward
// zero), and every lease is still held at the end.
func TestEveryLeaseRenewsOnItsOwnSchedule(t *testing.T) {
	const ttl, interval = time.Second, 100 * time.Millisecond
	opts := []lock.Option{lock.WithTTL(ttl), lock.WithRenewInterval(interval)}
	_, client := startRedis(t)
	nodes := make([]redis.UniversalClient, 3)
	for i := range nodes {
		_, nodes[i] = startRedis(t)
	}
	redlock, err := lock.NewRedlock(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, redlock)
	for name, l := range map[string]*lock.Locker{"one redis": newLocker(t, client, opts...), "redlock": redlock} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxTimeout(t, 10*time.Second)
			var leases []*lock.Lease
			for i := range 8 {
				lease, err := l.TryAcquire(ctx, "staggered/"+strconv.Itoa(i))
				if err != nil {
					t.Fatal(err)
				}
				releaseAtEnd(t, lease)
				leases = append(leases, lease)
				time.Sleep(interval / 7) // spread over most of an interval
			}
			lowest := ttl
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				for _, lease := range leases {
					lowest = min(lowest, time.Until(lease.ValidUntil()))
				}
			}
			t.Logf("lowest remaining validity seen: %v", lowest)
			if lowest < ttl/2 {
				t.Fatalf("a lease's remaining validity fell to %v (TTL %v, renewed every %v): renewals came late", lowest, ttl, interval)
			}
			for i, lease := range leases {
				if err := lease.Err(); err != nil {
					t.Fatalf("lease %d: %v", i, err)
				}
			}
		})
	}
}

// On Redis Cluster one stalled master costs only its own leases: the
// renewals of a Locker's leases on healthy masters are credited when those
// masters answer, not when the stalled one times out. Before, one pipeline
// for every node returned only once each node had answered (go-redis
// splits it per node and waits for all, retrying the stalled one), and 16
// of 16 leases on healthy masters were lost while another master was
// paused for twice the TTL.
func TestAStalledClusterMasterCostsOnlyItsOwnLeases(t *testing.T) {
	cluster := redistest.StartCluster(t)
	client := cluster.Client(t)
	ctx := ctxTimeout(t, time.Minute)
	l := newLocker(t, client, lock.WithTTL(time.Second), lock.WithRenewInterval(200*time.Millisecond))
	stalled := cluster.Masters[0]
	var healthy, onStalled []*lock.Lease
	for i := 0; len(healthy) < 16 || len(onStalled) < 4; i++ {
		key := "renew-" + strconv.Itoa(i)
		node, err := client.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		mine := node.Options().Addr == stalled.Addr()
		if (mine && len(onStalled) == 4) || (!mine && len(healthy) == 16) {
			continue
		}
		lease, err := l.TryAcquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, lease)
		if mine {
			onStalled = append(onStalled, lease)
		} else {
			healthy = append(healthy, lease)
		}
	}
	stalled.Pause()
	time.Sleep(2 * time.Second) // twice the TTL
	stalled.Resume()
	lost := 0
	for _, lease := range healthy {
		if lease.Err() != nil {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d leases on healthy masters lost while another master was paused", lost, len(healthy))
	}
	for _, lease := range onStalled {
		if lease.Err() == nil {
			t.Fatalf("a lease on the paused master outlived its TTL: %v", lease.ValidUntil())
		}
	}
}

// A released lease does not stay reachable until its next renewal would
// have come due: the watchdog sweeps ended leases out of its schedule once
// they fill half of it. Before, each one stayed for the renew interval
// (10 s by default): at 20,000 acquisitions a second that kept 200,000
// leases, about 120 MB, alive (measured: 590 B each). Leases still held
// keep their place through the sweeps and renew when due.
func TestReleasedLeasesAreNotKeptUntilTheirRenewalIsDue(t *testing.T) {
	const ttl, interval, held = 3 * time.Second, time.Second, 20
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(ttl), lock.WithRenewInterval(interval))
	ctx := ctxTimeout(t, 30*time.Second)
	holding := make([]*lock.Lease, held)
	first := make([]time.Time, held)
	for i := range holding {
		lease, err := l.TryAcquire(ctx, "held/"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, lease)
		holding[i], first[i] = lease, lease.ValidUntil()
	}
	var released []weak.Pointer[lock.Lease]
	for end := time.Now().Add(interval + interval/2); time.Now().Before(end); {
		lease, err := l.TryAcquire(ctx, "cycled")
		if err != nil {
			t.Fatal(err)
		}
		released = append(released, weak.Make(lease))
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, p := range released {
		if p.Value() != nil {
			alive++
		}
	}
	t.Logf("%d of %d released leases still reachable", alive, len(released))
	// Ended leases fill about half the schedule at most (here about as many
	// as the held ones); a few more may wait in the runtime's timer heap,
	// where a stopped deadline timer is removed lazily.
	if limit := 2*held + 10; alive > limit {
		t.Fatalf("%d of %d released leases are still reachable (at most %d expected): the schedule keeps ended leases until they come due", alive, len(released), limit)
	}
	// The held leases came due at one interval, during the sweeps: each
	// renews unless a sweep dropped it (it would end at its TTL unrenewed).
	for i, lease := range holding {
		waitFor(t, ttl/2, fmt.Sprintf("held lease %d to renew (renew interval %v): a sweep dropped it from the schedule", i, interval),
			func() bool { return lease.ValidUntil().After(first[i]) })
		if err := lease.Err(); err != nil {
			t.Fatalf("held lease %d: %v", i, err)
		}
	}
}

// Leases taken one after another do not wake the watchdog one by one: a
// lease due after the loop's timer fires is found when it fires. Waking
// the loop for each lease taken while the schedule was empty (as it is
// between serial cycles, once released leases are swept out) cost a
// goroutine switch and a futex call per cycle, about half the client's
// CPU per uncontended acquire+release (BenchmarkAcquireRelease).
func TestLeasesTakenOneAfterAnotherDoNotWakeTheWatchdogEach(t *testing.T) {
	var woken atomic.Int64
	lock.SetWatchdogWokenHook(t, func() { woken.Add(1) })
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(30*time.Second)) // renewed every 10 s
	ctx := ctxTimeout(t, 30*time.Second)
	const cycles = 1000
	for range cycles {
		lease, err := l.TryAcquire(ctx, "serial")
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d cycles woke the watchdog %d times", cycles, woken.Load())
	if n := woken.Load(); n > 5 {
		t.Fatalf("%d serial cycles woke the watchdog %d times: each lease woke it", cycles, n)
	}
}

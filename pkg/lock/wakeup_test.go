package lock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// scriptCalls is how many scripts the server ran since its stats were reset.
func scriptCalls(ctx context.Context, t *testing.T, client *redis.Client) int {
	t.Helper()
	return scripts(ctx, t, client)
}

// scripts is scriptCalls for tests and benchmarks.
func scripts(ctx context.Context, t testing.TB, client *redis.Client) int {
	t.Helper()
	stats, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(stats, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		_, rest, _ := strings.Cut(line, "calls=")
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		total += n
	}
	return total
}

// A key without a TTL was not written by this library and may never go
// away. A waiter backs off exponentially instead of polling it (about 270
// attempts in 2 s at the 10 ms minimum backoff before), and says so once in
// a metric.
func TestKeyWithoutTTLIsNotPolled(t *testing.T) {
	srv, client := startRedis(t)
	reg := prometheus.NewRegistry()
	l := newLocker(t, srv.Client(t), lock.WithMetrics(reg))
	ctx := ctxTimeout(t, 10*time.Second)
	if err := client.Set(ctx, "forever", "set-by-hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctxTimeout(t, 2*time.Second), "forever")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire = %v, want a deadline and ErrNotAcquired", err)
	}
	// Exponential from 10 ms to the 1 s cap, with jitter: about 10 in 2 s.
	if n := scriptCalls(ctx, t, client); n > 30 {
		t.Fatalf("%d acquire attempts in 2 s on a key without TTL: the waiter polls it", n)
	}
	if got := counterValue(t, reg, "redlease_lock_keys_without_ttl_total"); got != 1 {
		t.Fatalf("redlease_lock_keys_without_ttl_total = %v, want 1", got)
	}
}

// counterValue reads a counter from reg: the one whose label values are
// labels (none: the counter has no labels).
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var values []string
			for _, lp := range m.GetLabel() {
				values = append(values, lp.GetValue())
			}
			if slices.Equal(values, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v not registered", name, labels)
	return 0
}

// counterSum adds up every series of a counter in reg (0 when none was
// ever counted).
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// A waiter that was woken by a release and then gave up before trying
// (its context ended) passes the wake-up on: the next waiter of the same
// Locker takes the lock at once instead of sleeping out the holder's TTL.
func TestWaiterGivingUpAfterAWakeUpPassesItOn(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	firstCtx, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	// The first wake-up goes to the first waiter, whose context ends right
	// then, between the wake-up and its attempt.
	var once sync.Once
	lock.SetTestHooks(t, nil, func() { once.Do(cancelFirst) })
	holder := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second))
	// Waiters queued behind others of their Locker try on their own only
	// after the backoff maximum: 10 s here, so only a wake-up is fast.
	waiters := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second), lock.WithRetryBackoff(10*time.Millisecond, 10*time.Second))

	lease, err := holder.TryAcquire(ctx, "passed-on")
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := waiters.Acquire(firstCtx, "passed-on")
		first <- err
	}()
	time.Sleep(200 * time.Millisecond) // the first waiter is in line
	second := acquireInBackground(ctx, t, waiters, "passed-on")
	time.Sleep(200 * time.Millisecond) // and the second behind it
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first waiter = %v, want context.Canceled", err)
	}
	expectHandoff(t, second, released, time.Second, 15*time.Second,
		"the wake-up was not passed on to the second waiter", "the second waiter slept on: the wake-up the first one took was lost")
}

// A release published while the subscription's connection was down is
// never delivered. After go-redis reconnects and subscribes again, the
// oldest waiter is woken to look, instead of sleeping out the holder's TTL.
func TestReconnectedSubscriptionWakesAWaiter(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	holder := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second))
	waiter := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second))

	lease, err := holder.TryAcquire(ctx, "reconnect")
	if err != nil {
		t.Fatal(err)
	}
	got := acquireInBackground(ctx, t, waiter, "reconnect")
	time.Sleep(300 * time.Millisecond) // subscribed, sleeping on the 20 s TTL
	// Cut the subscription and release before it is back: the message is lost.
	if err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Expected: the reconnect delay (about 100 ms).
	expectHandoff(t, got, released, 3*time.Second, 10*time.Second,
		"the waiter after its subscription reconnected", "the waiter slept on after its subscription reconnected: the missed release was never noticed")
}

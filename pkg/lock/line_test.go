package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// separateLockers are n Lockers, each on its own client (connections and
// subscription), as n pods would have.
func separateLockers(t *testing.T, addr string, n int, opts ...lock.Option) []*lock.Locker {
	t.Helper()
	ls := make([]*lock.Locker, n)
	for i := range ls {
		c := redis.NewClient(&redis.Options{Addr: addr})
		closeAtEnd(t, c)
		ls[i] = newLocker(t, c, append([]lock.Option{lock.WithIdentity(fmt.Sprintf("pod-%d", i))}, opts...)...)
	}
	return ls
}

// Sixteen Lockers contend for one key, each acquiring 10 times with 1 ms
// holds. Each release hands the key to the first waiter in the Redis-side
// line and tells only that one, so the scripts run per acquisition stay a
// handful whatever the number of waiters (3.5 measured). With one wake-up
// per Locker per release (protocol 1) every release set the other Lockers
// trying: 11 scripts per acquisition, which fails the bound of 6.
func TestOneAttemptPerReleaseAcrossLockers(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	const contenders, rounds = 16, 10
	ls := separateLockers(t, srv.Addr(), contenders, lock.WithTTL(5*time.Second))
	perAcquisition := scriptsPerAcquisition(ctx, t, admin, rounds, ls, func(l *lock.Locker) func(context.Context) (*lock.Lease, error) {
		return func(ctx context.Context) (*lock.Lease, error) { return l.Acquire(ctx, "herd") }
	})
	t.Logf("%.1f scripts per acquisition (acquire attempts and releases) for %d Lockers", perAcquisition, contenders)
	if perAcquisition > 6 {
		t.Fatalf("%.1f scripts per acquisition: releases wake more than the next waiter", perAcquisition)
	}
}

// Eight Lockers with identities of their own (eight pods) contend for one
// key, each acquiring 10 times. A release tells the waiter it chose, and
// the one now first in line, on their processes' waiter channels, so only
// those processes receive it: about two messages per acquisition in all
// (2.0 measured). When a release was published on the key's events
// channel, every waiting process received every message and threw most
// away: 7.9 per acquisition, over the bound of 4.
func TestAReleaseWakesOnlyTheProcessesItConcerns(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	const contenders, rounds = 8, 10
	ls := make([]*lock.Locker, contenders)
	regs := make([]*prometheus.Registry, contenders)
	for i := range ls {
		regs[i] = prometheus.NewRegistry()
		ls[i] = separateLockers(t, srv.Addr(), 1, lock.WithTTL(5*time.Second), lock.WithIdentity(fmt.Sprintf("pod-%d", i)), lock.WithMetrics(regs[i]))[0]
	}
	_ = scriptsPerAcquisition(ctx, t, srv.Client(t), rounds, ls, func(l *lock.Locker) func(context.Context) (*lock.Lease, error) {
		return func(ctx context.Context) (*lock.Lease, error) { return l.Acquire(ctx, "wake") }
	})
	var received float64
	for _, reg := range regs {
		received += counterSum(t, reg, "redlease_lock_messages_received_total")
	}
	perAcquisition := received / (contenders * rounds)
	t.Logf("%.1f messages received per acquisition by %d Lockers", perAcquisition, contenders)
	if perAcquisition > 4 {
		t.Fatalf("%.1f messages received per acquisition: a release wakes processes it does not concern", perAcquisition)
	}
}

// An ACL written for the events channel alone (as pods needed before the
// waiter channels) still gets prompt hand-offs: the waiter's Locker drops
// its refused waiter channel and listens on the events channel, and the
// release, refused the waiter channel, tells the events channel. Before,
// the release failed (the script's user may not publish there), and the
// waiter's two channels, subscribed in one command, were refused together:
// it never heard a hand-off.
func TestAnACLWithoutWaiterChannelsKeepsHandOffsPrompt(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	const key = "strict"
	if err := admin.Do(ctx, "ACL", "SETUSER", "strict", "on", ">pw", "~*", "resetchannels",
		"&"+protocol.EventsChannel(key), "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	locker := func(identity string) *lock.Locker {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "strict", Password: "pw"})
		closeAtEnd(t, c)
		return newLocker(t, c, lock.WithTTL(30*time.Second), lock.WithIdentity(identity))
	}
	holder, waiter := locker("holder"), locker("waiter")
	first, err := holder.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lease, err := waiter.Acquire(ctx, key)
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	for admin.ZCard(ctx, protocol.LineKey(key)).Val() == 0 ||
		admin.PubSubNumSub(ctx, protocol.EventsChannel(key)).Val()[protocol.EventsChannel(key)] == 0 {
		if ctx.Err() != nil {
			t.Fatal("the waiter never queued and subscribed to the events channel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the waiter channel's refusal has come back
	released := time.Now()
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release with a waiter in line: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("handed over in %v", time.Since(released))
	case <-time.After(3 * time.Second):
		t.Fatal("the waiter did not get the lock within 3 s of the release (TTL 30 s): it missed the hand-off")
	}
}

// scriptsPerAcquisition has every Locker of ls take what acquire gives it
// rounds times, holding it 1 ms each time, all at once, and returns the
// scripts the server ran per acquisition (acquire attempts and releases).
func scriptsPerAcquisition(ctx context.Context, t *testing.T, admin *redis.Client, rounds int, ls []*lock.Locker,
	acquire func(*lock.Locker) func(context.Context) (*lock.Lease, error)) float64 {
	t.Helper()
	admin.ConfigResetStat(ctx)
	var wg sync.WaitGroup
	for _, l := range ls {
		take := acquire(l)
		wg.Go(func() {
			for range rounds {
				lease, err := take(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	return float64(scriptCalls(ctx, t, admin)) / float64(len(ls)*rounds)
}

// Waiters get the key in the order they queued, and a holder that releases
// and asks again at once queues behind them: by default and with WithFIFO,
// the line ordered by the clock or by ticket (WithTicketOrder). Without
// the line the releaser, fastest to ask, took the key again.
func TestTheLineHandsTheKeyInArrivalOrder(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []lock.Option
	}{
		{"default", nil},
		{"FIFO", []lock.Option{lock.WithFIFO()}},
		{"ticket order", []lock.Option{lock.WithTicketOrder()}},
		{"ticket order, FIFO", []lock.Option{lock.WithTicketOrder(), lock.WithFIFO()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := startRedis(t)
			ctx := ctxTimeout(t, 30*time.Second)
			const waiters = 5
			ls := separateLockers(t, srv.Addr(), waiters+1, append([]lock.Option{lock.WithTTL(10 * time.Second)}, tt.opts...)...)
			holder := ls[waiters]
			first, err := holder.TryAcquire(ctx, "order")
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				order []int
				wg    sync.WaitGroup
			)
			take := func(who int, l *lock.Locker) {
				lease, err := l.Acquire(ctx, "order")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, who)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
				}
			}
			for i := range waiters {
				wg.Go(func() { take(i, ls[i]) })
				time.Sleep(50 * time.Millisecond) // arrivals in index order
			}
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			take(waiters, holder) // the releaser asks again at once
			wg.Wait()
			if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
				t.Fatalf("acquisition order %v, want %v (arrival order, the releaser last)", order, want)
			}
		})
	}
}

// A waiter keeps its place, and the line, however long it waits: a holder
// renews for ten TTLs while two waiters from other processes wait, and the
// line holds both, in arrival order, at every look (every 10 ms) until the
// release hands the key to the first. Protocol 7's waiter keeps the line
// longer only when its last attempt that did is half a TTL old (the line
// is kept two TTLs and a hand-off window): a waiter that never kept it
// after joining would lose the line after 0.9 s here and rejoin behind
// the other.
func TestALiveWaiterKeepsTheLineThroughALongWait(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	const ttl = 300 * time.Millisecond
	ls := separateLockers(t, srv.Addr(), 3, lock.WithTTL(ttl))
	lease, err := ls[0].TryAcquire(ctx, "patient")
	if err != nil {
		t.Fatal(err)
	}
	line := protocol.LineKey("patient")
	first := acquireInBackground(ctx, t, ls[1], "patient")
	waitFor(t, 2*time.Second, "the first waiter to queue", func() bool { return client.ZCard(ctx, line).Val() == 1 })
	second := acquireInBackground(ctx, t, ls[2], "patient")
	waitFor(t, 2*time.Second, "the second waiter to queue", func() bool { return client.ZCard(ctx, line).Val() == 2 })
	order := client.ZRange(ctx, line, 0, -1).Val()
	for end := time.Now().Add(10 * ttl); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if now := client.ZRange(ctx, line, 0, -1).Val(); !slices.Equal(now, order) {
			t.Fatalf("the line went from %d waiters to %d (or changed order) while both waited", len(order), len(now))
		}
	}
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expectHandoff(t, first, released, 250*time.Millisecond, 5*time.Second,
		"the first waiter got the key late", "the first waiter never got the key")
	expectHandoff(t, second, released, 5*time.Second, 5*time.Second,
		"the second waiter got the key late", "the second waiter never got the key")
}

// A waiter whose context ends leaves the line: the next release goes to the
// waiter behind it at once. A waiter that stayed in line would be handed
// the key and leave the others waiting the hand-off window (1 s).
func TestAWaiterThatGivesUpLeavesTheLine(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	ls := separateLockers(t, srv.Addr(), 3, lock.WithTTL(10*time.Second))
	lease, err := ls[0].TryAcquire(ctx, "quitter")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := ls[1].Acquire(short, "quitter"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want it to wait until its context ends", err)
	}
	got := acquireInBackground(ctx, t, ls[2], "quitter")
	// The quitter's place goes in the background; the patient waiter queues.
	waitFor(t, 2*time.Second, "the line to hold only the patient waiter", func() bool {
		return client.ZCard(ctx, protocol.LineKey("quitter")).Val() == 1
	})
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expectHandoff(t, got, released, 250*time.Millisecond, 5*time.Second,
		"the release went to the waiter that gave up", "the patient waiter never got the key")
}

// A waiter that died at the head of the line (here: a value queued by
// hand, which nobody will confirm) costs the line one hand-off window, not
// the holder's TTL: the live waiter in another process hears the hand-off,
// hears no confirmation, and looks again.
func TestAHandOffToADeadWaiterCostsOneWindow(t *testing.T) {
	srv, client := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	ls := separateLockers(t, srv.Addr(), 2, lock.WithTTL(20*time.Second))
	lease, err := ls[0].TryAcquire(ctx, "dead-head")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := protocol.NewValue("dead-pod:1")
	if err != nil {
		t.Fatal(err)
	}
	// The dead waiter queued first, with a place kept for a minute.
	args := protocol.AcquireArgs{Value: dead, TTL: 20 * time.Second, Place: time.Minute}
	if err := protocol.AcquireScript.Run(ctx, client, protocol.AcquireKeys("dead-head"), args.Argv()...).Err(); err != nil {
		t.Fatal(err)
	}
	got := acquireInBackground(ctx, t, ls[1], "dead-head")
	waitFor(t, 2*time.Second, "the live waiter to queue", func() bool {
		return client.ZCard(ctx, protocol.LineKey("dead-head")).Val() == 2
	})
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Expected: the 1 s window and its jitter (at most 1.25 s), far below
	// the 20 s the waiter's timer was set to.
	expectHandoff(t, got, released, 5*time.Second, 15*time.Second,
		"the live waiter waited for the holder's TTL, not the window", "the live waiter never got the key")
}

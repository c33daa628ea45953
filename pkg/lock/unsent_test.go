package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Eight waiters, each a Locker on a client of its own, queue for a key held
// by a ninth. The server stops in an orderly way (its append-only file keeps
// the key, the line and the counter) and stays down until every waiter has
// tried at least once and failed to connect; then it comes back and the
// holder releases. An attempt that never left the client keeps its value
// and so its place: the waiters get the key in the order they queued. When a
// failed connection counted as an attempt that may have run, each waiter
// took a new value and queued again at the back, in whatever order its
// retry came after the restart.
func TestAWaiterKeepsItsPlaceThroughARestart(t *testing.T) {
	const (
		key     = "restart-line"
		waiters = 8
	)
	srv := redistest.StartStandalone(t, redistest.WithConfig("--appendonly", "yes"))
	admin := srv.Client(t)
	ctx := ctxTimeout(t, time.Minute)
	holder := newLocker(t, srv.Client(t), lock.WithIdentity("holder"), lock.WithTTL(10*time.Second))
	lease, err := holder.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// A TTL of 1 s: a waiter tries again at least every second, so each
	// tries while the server is down.
	q := queueWaiters(ctx, t, srv, key, waiters, time.Second)
	unsent := q.hooks
	line := q.line

	srv.Stop()
	waitFor(t, 10*time.Second, "every waiter to fail to connect while the server is down", func() bool {
		return !slices.ContainsFunc(unsent, func(u *unsentAcquisitions) bool { return u.unsent.Load() == 0 })
	})
	answered := q.answered()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	q.waitAnsweredSince(t, answered, "every waiter to try again after the restart")
	// A waiter whose attempt was in flight when the server stopped lost
	// it ambiguously and rightly queued again with a new value; every
	// other kept its value and its place.
	lost := func(v string) bool {
		var i int
		_, _ = fmt.Sscanf(v, "waiter-%d/", &i)
		return unsent[i].lost.Load() > 0
	}
	kept := slices.DeleteFunc(slices.Clone(line), lost)
	if len(kept) < waiters/2 {
		t.Fatalf("only %d of %d waiters had no attempt in flight at the stop: the run shows too little", len(kept), waiters)
	}
	if after := slices.DeleteFunc(admin.ZRange(ctx, protocol.LineKey(key), 0, -1).Val(), lost); !slices.Equal(after[:len(kept)], kept) {
		t.Fatalf("the line after the restart is %q, want it as it was %q", after, kept)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("the holder's release after the restart: %v", err)
	}
	order := q.served()
	served := slices.DeleteFunc(slices.Clone(order), func(i int) bool { return unsent[i].lost.Load() > 0 })
	if !slices.IsSorted(served) || len(served) < waiters/2 {
		t.Fatalf("acquisition order after the restart %v (of those that kept their places: %v), want the arrival order", order, served)
	}
}

// A server that restarts with much to load answers LOADING until it has
// loaded it; the scripts do not run. A waiter that retries meanwhile keeps
// its value and its place: three waiters queue behind a holder, the server
// restarts with 3,000 keys to load at 1 ms each, every waiter is told
// LOADING at least once, and afterwards the line holds the same values in
// the same order. When any error reply counted as an attempt that may
// have run, each waiter took a new value at the back of the line.
func TestAWaiterKeepsItsPlaceWhileTheServerLoads(t *testing.T) {
	const (
		key     = "loading-line"
		waiters = 3
		filler  = 3000
	)
	srv := redistest.StartStandalone(t, redistest.WithConfig("--appendonly", "yes",
		"--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024"))
	admin := srv.Client(t)
	ctx := ctxTimeout(t, time.Minute)
	holder := newLocker(t, srv.Client(t), lock.WithIdentity("holder"), lock.WithTTL(30*time.Second))
	lease, err := holder.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	p := admin.Pipeline()
	for i := range filler {
		p.Set(ctx, fmt.Sprintf("filler-%d", i), i, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// Into the file's RDB part, whose loading answers clients every KiB
	// (the command log part answers them every 1,024 commands only).
	if err := admin.BgRewriteAOF(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the append-only file to be rewritten", func() bool {
		return strings.Contains(admin.Info(ctx, "persistence").Val(), "aof_rewrite_in_progress:0")
	})
	// A TTL of 5 s keeps the line 10 s past a waiter's last try: longer
	// than the stop and the load.
	q := queueWaiters(ctx, t, srv, key, waiters, 5*time.Second)
	hooks, line := q.hooks, q.line

	srv.Stop()
	if err := srv.Start(); err != nil { // returns once the data is loaded
		t.Fatal(err)
	}
	for i, h := range hooks {
		if h.loading.Load() == 0 {
			t.Fatalf("waiter %d was never told LOADING: the run shows nothing", i)
		}
		if n := h.lost.Load(); n > 0 {
			t.Fatalf("waiter %d lost %d attempts in flight: the run shows too little", i, n)
		}
	}
	q.waitAnsweredSince(t, q.answered(), "every waiter to be answered after the load")
	if after := admin.ZRange(ctx, protocol.LineKey(key), 0, -1).Val(); !slices.Equal(after, line) {
		t.Fatalf("the line after the load is %q, want it as it was %q", after, line)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if order := q.served(); !slices.Equal(order, []int{0, 1, 2}) {
		t.Fatalf("acquisition order after the load %v, want the arrival order", order)
	}
}

// queuedWaiters are waiters that queued for a held key one after the
// other (queueWaiters).
type queuedWaiters struct {
	// hooks count each waiter's acquisitions, by waiter.
	hooks []*unsentAcquisitions
	// line is the key's line once every waiter queued, first in line first.
	line []string
	wg   sync.WaitGroup
	mu   sync.Mutex
	// order is the waiters in the order they got the key.
	order []int
}

// queueWaiters starts n waiters for key, a Locker each (identity waiter-i,
// TTL ttl) on a client of its own with an unsentAcquisitions hook, each
// queued before the next starts; each takes the key when it can and
// releases it at once.
func queueWaiters(ctx context.Context, t *testing.T, srv *redistest.Server, key string, n int, ttl time.Duration) *queuedWaiters {
	t.Helper()
	admin := srv.Client(t)
	q := &queuedWaiters{hooks: make([]*unsentAcquisitions, n)}
	for i := range n {
		q.hooks[i] = &unsentAcquisitions{}
		c := srv.Client(t)
		c.AddHook(q.hooks[i])
		l := newLocker(t, c, lock.WithIdentity(fmt.Sprintf("waiter-%d", i)), lock.WithTTL(ttl))
		q.wg.Go(func() {
			got, err := l.Acquire(ctx, key)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			q.mu.Lock()
			q.order = append(q.order, i)
			q.mu.Unlock()
			if err := got.Release(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
		})
		waitFor(t, 5*time.Second, fmt.Sprintf("waiter %d to queue", i), func() bool {
			return admin.ZCard(ctx, protocol.LineKey(key)).Val() == int64(i+1)
		})
	}
	q.line = admin.ZRange(ctx, protocol.LineKey(key), 0, -1).Val()
	return q
}

// answered is how many of each waiter's acquisitions the server answered
// so far.
func (q *queuedWaiters) answered() []int64 {
	n := make([]int64, len(q.hooks))
	for i, h := range q.hooks {
		n[i] = h.answered.Load()
	}
	return n
}

// waitAnsweredSince waits (what, 10 s at most) until the server answered
// another acquisition of every waiter than since (answered) counted.
func (q *queuedWaiters) waitAnsweredSince(t *testing.T, since []int64, what string) {
	t.Helper()
	waitFor(t, 10*time.Second, what, func() bool {
		for i, h := range q.hooks {
			if h.answered.Load() == since[i] {
				return false
			}
		}
		return true
	})
}

// served waits for every waiter and returns the order they got the key in.
func (q *queuedWaiters) served() []int {
	q.wg.Wait()
	return q.order
}

// unsentAcquisitions is a go-redis hook that counts acquisitions that
// failed before they reached the server (protocol.NotSent), those the
// server answered, and those lost in flight (sent, and the connection
// went before the reply: ambiguous, so the waiter rightly asks again with
// a new value, at the back of the line).
// loading counts LOADING replies: the server refused the script while it
// loaded its data.
type unsentAcquisitions struct{ unsent, answered, lost, loading atomic.Int64 }

func (*unsentAcquisitions) DialHook(next redis.DialHook) redis.DialHook { return next }

func (u *unsentAcquisitions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		switch {
		case !isAcquisition(cmd):
		case err == nil:
			u.answered.Add(1)
		case protocol.NotSent(err):
			u.unsent.Add(1)
		case !isReply(err):
			u.lost.Add(1)
		case strings.HasPrefix(err.Error(), "LOADING "):
			u.loading.Add(1)
		}
		return err
	}
}

// isReply reports an error the server replied (NOSCRIPT after the
// restart, say): the attempt was answered, not lost.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

func (*unsentAcquisitions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// isAcquisition reports whether cmd runs the acquire script, as a function
// or by its hash.
func isAcquisition(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 1 && (args[1] == protocol.AcquireScript.FunctionName() || args[1] == protocol.AcquireScript.Hash())
}

// An acquisition whose reply is lost is not sent again by go-redis: the
// script ran (the key holds the caller's value), so a second run would
// find the key "held" and the caller would wait out its own key for a TTL.
// Sent once, the attempt fails as one whose outcome is unknown, and the
// Locker gives the key back at once.
func TestALostReplyIsNotSentAgain(t *testing.T) {
	const key = "lost-reply"
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	proxy := faultproxy.New(t, srv.Addr())
	c := srv.Client(t, func(o *redis.Options) { o.Addr = proxy.Addr() }) // go-redis's default: 3 retries
	l := newLocker(t, c, lock.WithTTL(10*time.Second))
	if err := c.Ping(ctx).Err(); err != nil { // the connection, before the replies slow down
		t.Fatal(err)
	}
	proxy.Latency(time.Second)
	failed := make(chan error, 1)
	go func() {
		lease, err := l.TryAcquire(ctx, key)
		if err == nil {
			_ = lease.Release(ctx)
		}
		failed <- err
	}()
	waitFor(t, 5*time.Second, "the acquire script to run", func() bool { return admin.Exists(ctx, key).Val() == 1 })
	proxy.Cut() // the reply is lost with its connection
	proxy.Reset()
	proxy.Restore()
	err := <-failed
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want the lost reply's error (sent again, the script finds the caller's own key held)", err)
	}
	waitFor(t, 5*time.Second, "the Locker to give the key back", func() bool { return admin.Exists(ctx, key).Val() == 0 })
}

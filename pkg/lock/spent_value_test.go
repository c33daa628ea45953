package lock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// A waiter's attempt that got no reply (the server stalled past the
// client's read timeout, go-redis's own resends off) may still run when the
// server resumes: it may take the key, or keep a place in line, for its
// value. So the waiter never tries again with that value. A waiter that did
// would, on the resumed server, find the key set to its value by the
// stalled attempt and confirm it, while the background give-back of that
// same value, if its PING gets through, deletes the key under it or hands
// it on. (Here the give-backs' PINGs time out during the stall and are
// abandoned: the stalled attempt's key lives out its 2 s TTL.)
//
// MONITOR (a connection without timeouts, so it survives the stall) shows
// every acquire the server ran: after the resume, the value queued before
// the stall must appear in exactly one, the stalled attempt itself. A
// waiter that reuses its value after a timeout sends it again and fails
// this (checked).
func TestAWaiterNeverTriesAgainWithAValueWhoseAttemptTimedOut(t *testing.T) {
	srv, observer := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := protocol.LoadLibrary(ctx, observer); err != nil {
		t.Fatal(err)
	}
	monitor := srv.Monitor(t)
	client := srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 300 * time.Millisecond; o.MaxRetries = -1 })
	l := newLocker(t, client, lock.WithTTL(2*time.Second))
	const key = "stalled-waiter"
	holderTTL := 2500 * time.Millisecond
	if err := observer.Set(ctx, key, "holder:1/0", holderTTL).Err(); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(holderTTL)

	type result struct {
		lease *lock.Lease
		err   error
	}
	done := make(chan result, 1)
	go func() {
		lease, err := l.Acquire(ctx, key)
		done <- result{lease, err}
	}()
	var queued string
	waitFor(t, 5*time.Second, "the waiter queued", func() bool {
		line := observer.ZRange(ctx, protocol.LineKey(key), 0, -1).Val()
		if len(line) == 1 {
			queued = line[0]
		}
		return queued != ""
	})
	// Until the waiter is quiet: its attempts so far (the one that queued
	// and, usually, one more once its subscription is in force) answered.
	// Its next attempt comes when its timed wait ends, its TTL (2 s, less
	// than the holder's PTTL) after its last one.
	last := time.Now()
	for {
		time.Sleep(300 * time.Millisecond)
		if acquires(t, monitor.Mark(t, observer, "settling"))[queued] == 0 {
			break
		}
		last = time.Now()
	}
	next := last.Add(2 * time.Second)

	// Stalled across that attempt, well past the waiter's read timeout,
	// and past the holder's expiry.
	if time.Until(next) < 500*time.Millisecond {
		t.Fatalf("the waiter settled too late to stall the server before its next attempt (%v left)", time.Until(next))
	}
	srv.Pause()
	time.Sleep(max(time.Until(next), time.Until(expires)) + time.Second)
	srv.Resume()

	var r result
	select {
	case r = <-done:
	case <-time.After(15 * time.Second): // expected within the 2 s TTL of a stalled attempt's key
		t.Fatal("the waiter did not acquire after the server resumed")
	}
	if r.err != nil {
		t.Fatalf("Acquire = %v", r.err)
	}
	releaseAtEnd(t, r.lease)
	if r.lease.Value() == queued {
		t.Errorf("the lease holds the value %q whose attempt timed out", queued)
	}
	after := acquires(t, monitor.Mark(t, observer, "after-stall"))
	if n := after[queued]; n != 1 {
		t.Errorf("after the stall, the server ran %d acquires with the value whose attempt timed out, want 1 (the stalled attempt itself): %v", n, after)
	}
}

// acquires counts, per value, the acquire calls (FCALL of the library's
// acquire function) among calls: the value is the argument after the keys.
func acquires(t *testing.T, calls []redistest.Call) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, c := range calls {
		if c.Lua || !c.Is("fcall", protocol.AcquireScript.FunctionName()) {
			continue
		}
		nkeys, err := strconv.Atoi(c.Args[2])
		if err != nil || len(c.Args) < 4+nkeys {
			t.Fatalf("acquire call without a value: %q", c.Args)
		}
		counts[c.Args[3+nkeys]]++
	}
	return counts
}

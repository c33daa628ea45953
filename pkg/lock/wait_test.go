package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// A waiter is woken by the release message, not by its fallback timer: the
// holder's TTL (the fallback) is 20s, the hand-off must take well under a second.
func TestWaiterIsWokenByTheReleaseMessage(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	holderL := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second))
	waiterL := newLocker(t, srv.Client(t), lock.WithTTL(20*time.Second))

	lease, err := holderL.TryAcquire(ctx, "handoff")
	if err != nil {
		t.Fatal(err)
	}
	got := acquireInBackground(ctx, t, waiterL, "handoff")
	time.Sleep(200 * time.Millisecond) // let the waiter subscribe and sleep on the 20s TTL
	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Expected: about a millisecond. The bound is far above that and far
	// below the 20s fallback.
	expectHandoff(t, got, released, 250*time.Millisecond, 5*time.Second,
		"the waiter was not woken by the release", "the waiter was not woken by the release message")
}

// A goroutine asking for a key its own Locker holds waits, as with sync.Mutex.
func TestSameLockerContendsLikeSeparateProcesses(t *testing.T) {
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(10*time.Second))
	ctx := ctxTimeout(t, 10*time.Second)
	first, err := l.Acquire(ctx, "reentry")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctxTimeout(t, 100*time.Millisecond), "reentry"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Acquire on a held key = %v, want it to wait until its context ends", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, err := l.Acquire(ctx, "reentry")
		if err != nil {
			t.Error(err)
			return
		}
		if err := second.Release(ctx); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, done, 2*time.Second, "the second goroutine's acquisition")
}

// Cancellation returns promptly with an error matching the context's error
// (and ErrNotAcquired, since the key was held).
func TestAcquireReturnsPromptlyWhenItsContextEnds(t *testing.T) {
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(30*time.Second))
	ctx := ctxTimeout(t, 10*time.Second)
	lease, err := l.TryAcquire(ctx, "cancel")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)

	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := l.Acquire(ctx, "cancel")
			if !errors.Is(err, tt.want) || !errors.Is(err, lock.ErrNotAcquired) {
				t.Fatalf("Acquire = %v, want %v and ErrNotAcquired", err, tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Acquire returned %v after a 100ms context", d)
			}
		})
	}
}

// Close wakes waiting Acquire calls with ErrClosed and releases held leases.
// A wait that runs out during an attempt (the server stalled: the attempt
// never answers) says what the attempts before it found, as a wait that
// runs out between attempts does: the key was held. Before, only the
// attempt's deadline came back, and lockctl could not tell a held lock from
// an outage.
func TestAWaitThatRunsOutDuringAnAttemptSaysWhatTheAttemptsFound(t *testing.T) {
	srv, client := startRedis(t)
	holder := newLocker(t, client, lock.WithTTL(time.Second))
	ctx := ctxTimeout(t, 20*time.Second)
	lease, err := holder.TryAcquire(ctx, "stalled")
	if err != nil {
		t.Fatal(err)
	}
	waiter := newLocker(t, srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }), lock.WithTTL(time.Second))
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	// The waiter's first attempt sees the holder; its next one, about a
	// second later (the holder's TTL), finds the server stalled.
	time.AfterFunc(500*time.Millisecond, srv.Pause)
	defer srv.Resume()
	_, err = waiter.Acquire(wctx, "stalled")
	srv.Resume()
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire = %v, want the deadline and ErrNotAcquired (what the first attempt found)", err)
	}
	releaseAtEnd(t, lease)
}

func TestCloseReleasesLeasesAndStopsWaiters(t *testing.T) {
	_, client := startRedis(t)
	holder := newLocker(t, client)
	l, err := lock.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 10*time.Second)
	mine, err := l.TryAcquire(ctx, "closing-held")
	if err != nil {
		t.Fatal(err)
	}
	other, err := holder.TryAcquire(ctx, "closing-wait")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, other)
	waitErr := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, "closing-wait")
		waitErr <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitErr:
		if !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("waiting Acquire = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not stop a waiting Acquire")
	}
	if !errors.Is(mine.Err(), lock.ErrReleased) {
		t.Fatalf("held lease after Close: %v, want ErrReleased", mine.Err())
	}
	if n := client.Exists(ctx, "closing-held").Val(); n != 0 {
		t.Fatal("Close left its lease's key in Redis")
	}
}

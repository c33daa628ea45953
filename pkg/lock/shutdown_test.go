package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// Release racing Close while the watchdog renews. Reproduced before as a
// deadlock: the renewal announced itself, then queued for the Locker's
// in-flight lock behind Close; Release, holding that lock, waited for the
// announced renewal forever. The hook holds the renewal right after it
// announced itself, so the interleaving happens on every run.
func TestReleaseRacingCloseDuringARenewal(t *testing.T) {
	srv, _ := startRedis(t)
	announced := make(chan struct{})
	proceed := make(chan struct{})
	var once sync.Once
	lock.SetTestHooks(t, func() {
		once.Do(func() {
			close(announced)
			<-proceed
		})
	}, nil)
	l, err := lock.New(srv.Client(t), lock.WithTTL(3*time.Second), lock.WithRenewInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctxTimeout(t, 5*time.Second), "shutdown")
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, announced, 5*time.Second, "a watchdog renewal")

	released, closed := make(chan struct{}), make(chan struct{})
	// Which of the two wins (and so what each returns) is not the point:
	// that both return is.
	go func() { _ = lease.Release(context.Background()); close(released) }()
	go func() { _ = l.Close(); close(closed) }()
	time.Sleep(100 * time.Millisecond) // Release waits for the renewal; Close for both
	close(proceed)
	// Expected within milliseconds; Close alone gives up waiting after 5 s.
	waitClosed(t, released, 3*time.Second, "Release returning (deadlock between Release, Close and the renewal)")
	waitClosed(t, closed, 6*time.Second, "Close returning")
}

// The same race without the hook, many times under the race detector:
// Release, Close and renewals in flight in every order real timing gives.
func TestReleaseRacingCloseInALoop(t *testing.T) {
	srv, _ := startRedis(t)
	client := srv.Client(t)
	ctx := ctxTimeout(t, time.Minute)
	for i := range 100 {
		l, err := lock.New(client, lock.WithTTL(time.Second), lock.WithRenewInterval(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		lease, err := l.TryAcquire(ctx, "loop")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond) // let renewals start
		done := make(chan struct{}, 2)
		// As above: the race's winner is not the point, both returning is.
		go func() { _ = lease.Release(context.Background()); done <- struct{}{} }()
		go func() { _ = l.Close(); done <- struct{}{} }()
		for range 2 {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: Release and Close did not both return", i)
			}
		}
		if n := client.Exists(ctx, "loop").Val(); n != 0 {
			t.Fatalf("iteration %d: the key outlived Release and Close", i)
		}
	}
}

// Waiters whose Locker closes give up, and a waiter that gives up leaves
// the key's waiting line (else each place left behind later costs the
// others a hand-off window): Close waits, within its bound, for the leaves
// its waiters owe. Before, each leave was sent in the background and
// dropped once the backend had closed: 16 waiters were all still in line
// 2 s after Close.
func TestCloseWaitsForItsWaitersToLeaveTheLine(t *testing.T) {
	for _, kind := range []kind{lockKind, semKind} {
		t.Run(kind.name, func(t *testing.T) {
			srv, client := startRedis(t)
			ctx := ctxTimeout(t, 20*time.Second)
			const key, waiters = "closing", 16
			holder := kind.handle(newLocker(t, client, lock.WithTTL(10*time.Second)), key)
			for range kind.permits {
				lease, err := holder.TryAcquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				releaseAtEnd(t, lease)
			}
			l, err := lock.New(srv.Client(t), lock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range waiters {
				wg.Go(func() {
					if _, err := kind.handle(l, key).Acquire(ctx); !errors.Is(err, lock.ErrClosed) {
						t.Errorf("a waiter of the closed Locker: %v, want ErrClosed", err)
					}
				})
			}
			waitFor(t, 5*time.Second, "every waiter to queue", func() bool {
				return client.ZCard(ctx, kind.lineKey(key)).Val() == waiters
			})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Close returns once the leaves are done: no wait here.
			if n := client.ZCard(ctx, kind.lineKey(key)).Val(); n != 0 {
				t.Fatalf("%d of %d waiters still in line after Close", n, waiters)
			}
			wg.Wait()
		})
	}
}

package lock_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// exampleAddr is the redis-server the runnable examples use.
var exampleAddr string

// TestMain starts the examples' server and, after every test, fails the run
// if any goroutine outlived its Locker or Lease.
func TestMain(m *testing.M) {
	srv, stop, err := redistest.StartForMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleAddr = srv.Addr()
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startRedis starts a real redis-server for one test and returns a client on it.
func startRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.StartStandalone(t)
	return srv, srv.Client(t)
}

// newLocker and releaseAtEnd are the shared lease helpers.
var (
	newLocker    = locktest.New
	releaseAtEnd = locktest.ReleaseAtEnd
	waitFor      = locktest.WaitFor
)

// closeAtEnd closes c when the test ends and fails the test if that fails.
func closeAtEnd(t testing.TB, c io.Closer) {
	t.Helper()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitClosed fails the test unless ch closes within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
	}
}

// acquireInBackground starts l.Acquire(ctx, key) in a goroutine. The channel
// receives the time it got the lease (which it then releases) or is closed
// without a value when Acquire failed (reported with t.Error).
func acquireInBackground(ctx context.Context, t *testing.T, l *lock.Locker, key string) <-chan time.Time {
	t.Helper()
	got := make(chan time.Time, 1)
	go func() {
		next, err := l.Acquire(ctx, key)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
		_ = next.Release(ctx) // races the end of the test (the Locker's Close): the outcome is not checked here
	}()
	return got
}

// expectHandoff fails the test unless got delivers within bound of released,
// waiting at most giveUp; slow and lost describe the two failures.
func expectHandoff(t *testing.T, got <-chan time.Time, released time.Time, bound, giveUp time.Duration, slow, lost string) {
	t.Helper()
	select {
	case at, ok := <-got:
		if !ok {
			return // Acquire failed: already reported
		}
		if d := at.Sub(released); d > bound {
			t.Fatalf("%s: took %v after the release (bound %v)", slow, d, bound)
		}
	case <-time.After(giveUp):
		t.Fatal(lost)
	}
}

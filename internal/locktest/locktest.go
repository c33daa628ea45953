// Package locktest holds the lease helpers the tests of several packages
// share: Lockers closed and leases released when a test ends, with their
// errors checked instead of dropped.
package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// New returns a Locker on client, closed when t ends (an error from Close
// fails the test).
func New(t testing.TB, client redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.New(client, opts...)
	return closedAtEnd(t, l, err)
}

// NewRedlock returns a Redlock Locker over clients, closed when t ends.
func NewRedlock(t testing.TB, clients []redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.NewRedlock(clients, opts...)
	return closedAtEnd(t, l, err)
}

func closedAtEnd(t testing.TB, l *lock.Locker, err error) *lock.Locker {
	t.Helper()
	if err != nil {
		t.Fatalf("creating the Locker: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, lock.ErrClosed) {
			t.Errorf("closing the Locker: %v", err)
		}
	})
	return l
}

// ReleaseAtEnd releases lease when t ends (before the Lockers and servers
// started earlier are closed), failing the test on any error but
// ErrLeaseLost and ErrReleased: a lease the test lost or ended on purpose.
func ReleaseAtEnd(t testing.TB, lease *lock.Lease) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := lease.Release(ctx); err != nil && !errors.Is(err, lock.ErrLeaseLost) && !errors.Is(err, lock.ErrReleased) {
			t.Errorf("Release %q: %v", lease.Key(), err)
		}
	})
}

// WaitFor polls cond every 5 ms and fails t unless it holds within d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Eventually polls f every 200 ms, for what a cluster or another process
// does, and fails t with f's last error unless it returns nil within d.
func Eventually(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Contend makes a Locker of its own on client, with identity and a TTL of
// 30 s, wait in the background until ctx ends for key: a lock, or a
// semaphore of permits when permits is above 1. A lease it gets it
// releases at once. The channel receives its Acquire's error: nil when it
// got the lease.
func Contend(ctx context.Context, t testing.TB, client redis.UniversalClient, key string, permits int, identity string) <-chan error {
	t.Helper()
	l := New(t, client, lock.WithIdentity(identity), lock.WithTTL(30*time.Second))
	done := make(chan error, 1)
	go func() {
		var (
			lease *lock.Lease
			err   error
		)
		if permits > 1 {
			lease, err = l.Semaphore(key, permits).Acquire(ctx)
		} else {
			lease, err = l.Acquire(ctx, key)
		}
		if err == nil {
			_ = lease.Release(context.WithoutCancel(ctx))
		}
		done <- err
	}()
	return done
}

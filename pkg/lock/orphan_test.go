package lock_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// A script that fails halfway is not rolled back by Redis. An acquisition
// whose fence counter cannot be incremented (not an integer, or at the
// limit of exact Lua numbers) must fail without leaving the lock key set:
// otherwise every attempt would lock the key for a full TTL, held by nobody.
func TestFailedAcquireLeavesNoKey(t *testing.T) {
	tests := []struct {
		name    string
		counter string
	}{
		{"counter is not an integer", "not-a-number"},
		{"counter is negative", "-5"},
		{"counter is 2^53-1: the next token would be inexact", strconv.FormatUint(1<<53-1, 10)},
		{"counter is far above 2^53", "18446744073709551615"},
	}
	_, client := startRedis(t)
	l := newLocker(t, client, lock.WithTTL(30*time.Second))
	ctx := ctxTimeout(t, 10*time.Second)
	// A lock's acquisition and a permit's end the same way: nothing held by
	// nobody (a permit's holder record included), the counter untouched.
	kinds := []struct {
		name    string
		prefix  string
		acquire func(key string) (*lock.Lease, error)
		left    func(key string) []string // what the failed attempt must not leave
	}{
		{"", "orphan/", func(key string) (*lock.Lease, error) { return l.TryAcquire(ctx, key) },
			func(key string) []string { return []string{key} }},
		{", a permit", "orphan/permits/", func(key string) (*lock.Lease, error) { return l.Semaphore(key, 2).TryAcquire(ctx) },
			func(key string) []string { return []string{key, protocol.HoldersKey(key)} }},
	}
	for i, tt := range tests {
		for _, kind := range kinds {
			t.Run(tt.name+kind.name, func(t *testing.T) {
				key := kind.prefix + strconv.Itoa(i)
				if err := client.Set(ctx, protocol.FenceKey(key), tt.counter, 0).Err(); err != nil {
					t.Fatal(err)
				}
				lease, err := kind.acquire(key)
				if err == nil {
					if err := lease.Release(ctx); err != nil {
						t.Error(err)
					}
					t.Fatalf("acquiring with fence counter %q succeeded (fence %d)", tt.counter, lease.Fence())
				}
				if errors.Is(err, lock.ErrNotAcquired) {
					t.Fatalf("acquire = %v: a broken counter is an error, not a held lock", err)
				}
				if n := client.Exists(ctx, kind.left(key)...).Val(); n != 0 {
					t.Fatalf("the failed attempt left %d of %v behind, %q locked for %v (error was %v)", n, kind.left(key), key, client.PTTL(ctx, key).Val(), err)
				}
				if got := client.Get(ctx, protocol.FenceKey(key)).Val(); got != tt.counter {
					t.Fatalf("the counter changed to %q", got)
				}
			})
		}
	}
	// Just below the limit is fine: the token is 2^53-1, still exact.
	key := "orphan/below-the-limit"
	client.Set(ctx, protocol.FenceKey(key), strconv.FormatUint(1<<53-2, 10), 0)
	lease, err := l.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	if lease.Fence() != 1<<53-1 {
		t.Fatalf("fence = %d, want 2^53-1", lease.Fence())
	}
}

// A fence floor above 2^53-1 cannot be held exactly by the scripts: it is
// refused before it reaches Redis.
func TestRaiseFenceRefusesInexactFloors(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := protocol.RaiseFence(ctx, protocol.Scripts(client), "floor", 1<<53); !errors.Is(err, protocol.ErrFenceRange) {
		t.Fatalf("RaiseFence(2^53) = %v, want ErrFenceRange", err)
	}
	if n := client.Exists(ctx, protocol.FenceKey("floor")).Val(); n != 0 {
		t.Fatal("the refused floor was written")
	}
	raised, err := protocol.RaiseFence(ctx, protocol.Scripts(client), "floor", 1<<53-1)
	if err != nil || !raised {
		t.Fatalf("RaiseFence(2^53-1) = %v, %v; want raised", raised, err)
	}
}

// An attempt whose reply never came (the server stalled past the caller's
// deadline) may still run when the server resumes. The Locker gives the
// value back on its own, so the key does not stay locked by nobody for a
// full TTL, blocking this very caller.
func TestTimedOutAttemptIsGivenBack(t *testing.T) {
	srv, _ := startRedis(t)
	client := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true; o.MaxRetries = -1 })
	observer := srv.Client(t)
	l := newLocker(t, client, lock.WithTTL(30*time.Second))
	ctx := ctxTimeout(t, 20*time.Second)

	// A warm connection and a cached script, as in a running process: the
	// stalled request is the EVALSHA that takes the key.
	warm, err := l.TryAcquire(ctx, "stalled")
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	_, err = l.TryAcquire(ctxTimeout(t, 200*time.Millisecond), "stalled")
	srv.Resume()
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryAcquire against a paused server = %v, want a timeout", err)
	}
	// The server answers this PING only after it ran what was already
	// waiting on its sockets: the stalled attempt, which sets the key.
	if err := observer.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Expected within milliseconds of the resume; the bound is far above
	// that and far below the 30 s the orphan would otherwise live.
	deadline := time.Now().Add(5 * time.Second)
	for observer.Exists(ctx, "stalled").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out attempt's key is still there, %v left: it was never given back", observer.PTTL(ctx, "stalled").Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	lease, err := l.TryAcquire(ctx, "stalled")
	if err != nil {
		t.Fatalf("the caller is blocked by its own earlier attempt: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

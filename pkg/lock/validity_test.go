package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// steppingClock advances by step on every reading: the process "pauses"
// between sending a request and reading its reply.
type steppingClock struct {
	mu     sync.Mutex
	offset time.Duration
	step   time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += c.step
	return time.Now().Add(c.offset)
}

func (c *steppingClock) AfterFunc(d time.Duration, f func()) lock.Timer { return time.AfterFunc(d, f) }

// Validity counts from before the request was sent. A reply read after a
// pause longer than the TTL must not be taken as a lease — the key may
// already have expired and been taken — and the key is given back.
func TestAReplyReadAfterThePauseIsNotALease(t *testing.T) {
	_, client := startRedis(t)
	const ttl = time.Second
	l := newLocker(t, client, lock.WithTTL(ttl), lock.WithClock(&steppingClock{step: ttl}))
	ctx := ctxTimeout(t, 10*time.Second)

	lease, err := l.TryAcquire(ctx, "paused-reply")
	var na *lock.NotAcquiredError
	if !errors.Is(err, lock.ErrNotAcquired) || !errors.As(err, &na) || na.Reason == "" {
		t.Fatalf("TryAcquire = %v, %v; want not acquired because validity ran out", lease, err)
	}
	if n := client.Exists(context.Background(), "paused-reply").Val(); n != 0 {
		t.Fatal("the late acquisition was left in Redis")
	}
}

// manualClock only moves when told, and its timers never fire: what a
// process sees when its deadline passed but its timer goroutine has not
// been scheduled yet.
type manualClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

func (c *manualClock) AfterFunc(time.Duration, func()) lock.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool               { return false }
func (stoppedTimer) Reset(time.Duration) bool { return false }

// Err never reports a lease held past ValidUntil, even when the deadline
// timer has not run.
func TestErrChecksTheDeadlineItself(t *testing.T) {
	_, client := startRedis(t)
	clock := &manualClock{}
	l := newLocker(t, client, lock.WithTTL(time.Second), lock.WithClock(clock), lock.WithoutWatchdog())
	lease, err := l.TryAcquire(ctxTimeout(t, 5*time.Second), "deadline")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("Err right after acquiring = %v", err)
	}
	clock.advance(time.Second)
	if err := lease.Err(); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("Err past ValidUntil with no timer run = %v, want ErrLeaseLost", err)
	}
	select {
	case <-lease.Done():
	default:
		t.Fatal("Done still open after Err reported the lease lost")
	}
}

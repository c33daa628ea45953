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

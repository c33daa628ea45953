package lock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// Sixteen reader goroutines of one process take a key shared in a loop
// while a writer takes it 300 times. A writer's release hands shared holds
// to every reader queued behind it, and each is told; a reader whose notice
// came before it registered its wait finds it among the grants it keeps.
// When one release tells more readers than that memory holds, a reader
// whose notice left it looks again. Before, it slept through the hand-off
// window (1 s) holding a hold it did not know of, and the writer behind it
// waited that long (3 rounds in 400); here no writer waits 900 ms.
func TestReadersToldTogetherNeverStallTheWriter(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := ctxTimeout(t, time.Minute)
	readers := newLocker(t, srv.Client(t))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lease, err := readers.AcquireShared(ctx, "stall")
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
				_ = lease.Release(ctx) // the key is the test's own; a failed release is caught by the writer's wait
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	w := newLocker(t, srv.Client(t), lock.WithIdentity("writer"))
	var longest time.Duration
	for range 300 {
		asked := time.Now()
		lease, err := w.Acquire(ctx, "stall")
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(asked))
		time.Sleep(time.Millisecond)
		if err := lease.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the writer's longest wait: %v", longest)
	if longest >= 900*time.Millisecond {
		t.Fatalf("the writer waited %v: a reader slept through a hand-off window", longest)
	}
}

package lock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

func TestInspectNamesTheHolderWithoutTheValue(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	clients := []redis.UniversalClient{nodes[0].Client(t), nodes[1].Client(t), nodes[2].Client(t)}
	ctx := ctxTimeout(t, 10*time.Second)
	for _, tt := range []struct {
		name string
		l    *lock.Locker
	}{
		{"single", newLocker(t, clients[0], lock.WithIdentity("pod-a"), lock.WithTTL(5*time.Second))},
		{"redlock", newRedlock(t, clients, lock.WithIdentity("pod-a"), lock.WithTTL(5*time.Second))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			free, err := tt.l.Inspect(ctx, "inspected-"+tt.name)
			if err != nil || free.Held || free.Fence != 0 {
				t.Fatalf("Inspect of a free key = %+v, %v", free, err)
			}
			lease, err := tt.l.TryAcquire(ctx, "inspected-"+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, lease)
			h, err := tt.l.Inspect(ctx, "inspected-"+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Held || h.Identity != "pod-a" || h.Fence != lease.Fence() || h.TTL <= 0 || h.TTL > 5*time.Second {
				t.Fatalf("Inspect = %+v, want held by pod-a with fence %d and a TTL", h, lease.Fence())
			}
		})
	}
}

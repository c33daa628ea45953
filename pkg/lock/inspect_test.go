package lock_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
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

// TestLockValuesAreNeverLogged: a Locker's logger, at V(1), records an
// acquisition, a release and a lost lease, and no line carries a value.
func TestLockValuesAreNeverLogged(t *testing.T) {
	_, client := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	var mu sync.Mutex
	var logs strings.Builder
	l := newLocker(t, client, lock.WithoutWatchdog(), lock.WithLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1})))
	var values []string
	for _, lose := range []bool{false, true} {
		lease, err := l.TryAcquire(ctx, "logged")
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, lease.Value())
		if lose {
			client.Del(ctx, "logged")
			err = lease.Renew(ctx)
		} else {
			err = lease.Release(ctx)
		}
		if (err != nil) != lose {
			t.Fatalf("lose %v: %v", lose, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"lease acquired", "lease released", "lease lost"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("no %q line: the search below proves too little:\n%s", want, logs.String())
		}
	}
	for _, v := range values {
		if strings.Contains(logs.String(), v[strings.LastIndexByte(v, '/')+1:]) {
			t.Errorf("a lock value appears in the logs:\n%s", logs.String())
		}
	}
}

package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartSentinel(t *testing.T) {
	t.Parallel()
	g := StartSentinel(t, 1)
	ctx := t.Context()

	if got, err := g.CurrentMaster(ctx); err != nil || got != g.Master.Addr() {
		t.Fatalf("CurrentMaster = %q, %v; want %s", got, err, g.Master.Addr())
	}
	addrs := g.SentinelAddrs()
	if len(addrs) != 3 {
		t.Fatalf("SentinelAddrs = %v, want 3", addrs)
	}
	for _, a := range addrs {
		if g.ServerByAddr(a) == nil {
			t.Errorf("ServerByAddr(%s) = nil", a)
		}
	}
	if g.ServerByAddr(g.Replicas[0].Addr()) != g.Replicas[0] {
		t.Error("ServerByAddr does not find the replica")
	}
	// Each Sentinel on its own knows the replica and its two peers.
	for _, sn := range g.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr()})
		m, err := c.Master(ctx, g.MasterName).Result()
		_ = c.Close()
		if err != nil {
			t.Fatalf("%s: SENTINEL MASTER: %v", sn, err)
		}
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" || m["flags"] != "master" {
			t.Errorf("%s: flags %q, num-slaves %s, num-other-sentinels %s", sn, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
	}

	// A Sentinel-aware client finds and uses the master.
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: addrs})
	t.Cleanup(func() { _ = fc.Close() })
	if err := fc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through Sentinel: %v", err)
	}
	if got, err := g.Master.Client(t).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET on master = %q, %v; want v", got, err)
	}
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	// With a password, so Sentinel's auth-pass is exercised too.
	g := StartSentinel(t, 2, WithPassword("s3cret"))
	ctx := t.Context()
	old := g.Master.Addr()

	start := time.Now()
	newMaster, err := g.Failover(ctx)
	if err != nil {
		t.Fatalf("Failover: %v", err)
	}
	t.Logf("Failover returned after %v", time.Since(start).Round(time.Millisecond))
	if newMaster == old {
		t.Fatalf("Failover kept %s as master", old)
	}
	if got, err := g.CurrentMaster(ctx); err != nil || got != newMaster {
		t.Errorf("CurrentMaster = %q, %v; want %s", got, err, newMaster)
	}
	promoted := g.ServerByAddr(newMaster)
	if !slices.Contains(g.Replicas, promoted) {
		t.Fatalf("new master %s is not one of the replicas", newMaster)
	}
	if err := promoted.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET on the new master: %v", err)
	}

	// The Sentinels then turn the old master into a replica of the new one.
	err = poll(ctx, 40*time.Second, func(ctx context.Context) error {
		info, err := g.Master.Info(ctx, "replication")
		if err != nil {
			return err
		}
		if info["role"] != "slave" || info["master_port"] != strconv.Itoa(promoted.Port()) || info["master_link_status"] != "up" {
			return fmt.Errorf("role %q, master_port %q, master_link_status %q", info["role"], info["master_port"], info["master_link_status"])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("old master %s did not become a replica of %s: %v", old, newMaster, err)
	}
	t.Logf("old master replicating the new one after %v", time.Since(start).Round(time.Millisecond))
}

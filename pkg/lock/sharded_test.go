package lock_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// On Redis Cluster a key's messages stay on its shard: releases publish
// with SPUBLISH on the key's master and waiters subscribe there with
// SSUBSCRIBE, one subscription per slot in use (plain PUBLISH reaches
// every node of the cluster). Servers without sharded pub/sub (before
// Redis 7.0; here its commands are renamed away) get plain pub/sub on both
// sides. Either way a waiter in another process is handed each of three
// keys on three masters within a second of the release (its TTL, 20 s, is
// what it would wait without the message).
func TestClusterMessagesStayOnTheKeysShard(t *testing.T) {
	noSharded := redistest.WithConfig("--rename-command", "SPUBLISH", `""`, "--rename-command", "SSUBSCRIBE", `""`,
		"--rename-command", "SUNSUBSCRIBE", `""`)
	for _, tt := range []struct {
		name    string
		opts    []redistest.Option
		sharded bool
	}{
		{"sharded pub/sub", nil, true},
		{"servers without sharded pub/sub", []redistest.Option{noSharded}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cluster := redistest.StartCluster(t, tt.opts...)
			ctx := ctxTimeout(t, time.Minute)
			holder := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))
			waiter := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))
			keys := []string{"alpha", "jobs", "beta"} // slots 865, 9631, 15419: one on each master
			for _, key := range keys {
				lease, err := holder.TryAcquire(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				got := acquireInBackground(ctx, t, waiter, key)
				time.Sleep(200 * time.Millisecond) // the waiter queues and subscribes
				released := time.Now()
				if err := lease.Release(ctx); err != nil {
					t.Fatal(err)
				}
				expectHandoff(t, got, released, time.Second, 10*time.Second,
					key+": the message did not wake the waiter", key+": no hand-off within 10s")
			}
			var plain int
			for _, m := range cluster.Masters {
				info, err := m.Info(ctx, "commandstats")
				if err != nil {
					t.Fatal(err)
				}
				p, s := calls(info["cmdstat_publish"]), calls(info["cmdstat_spublish"])
				t.Logf("%s: PUBLISH %d, SPUBLISH %d", m.Addr(), p, s)
				if tt.sharded && (p != 0 || s == 0) {
					t.Errorf("%s: PUBLISH %d, SPUBLISH %d: want its key's messages on sharded pub/sub, and only them", m.Addr(), p, s)
				}
				plain += p
			}
			if !tt.sharded && plain < len(keys) {
				t.Fatalf("PUBLISH %d: want the messages on plain pub/sub", plain)
			}
		})
	}
}

// calls reads calls=N from an INFO commandstats line; 0 when absent.
func calls(stat string) int {
	for field := range strings.SplitSeq(stat, ",") {
		if v, ok := strings.CutPrefix(field, "calls="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// A waiter's sharded subscription follows its key's slot to another
// master: when the slot moves, the old master unsubscribes its clients
// from the slot's channels, the waiter subscribes again on the new owner,
// and the release there still hands it the key within a second (without
// the new subscription it would wait out the holder's 20 s TTL).
func TestClusterWaiterFollowsItsKeysSlot(t *testing.T) {
	cluster := redistest.StartCluster(t)
	ctx := ctxTimeout(t, time.Minute)
	const key = "alpha"
	holder := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))
	waiter := newLocker(t, cluster.Client(t), lock.WithTTL(20*time.Second))
	lease, err := holder.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := acquireInBackground(ctx, t, waiter, key)
	admins := make([]*redis.Client, len(cluster.Masters))
	for i, m := range cluster.Masters {
		admins[i] = m.Client(t)
	}
	channel := protocol.EventsChannel(key)
	subscribedOn := func() int {
		for i, a := range admins {
			if chs, err := a.PubSubShardChannels(ctx, channel).Result(); err == nil && len(chs) > 0 {
				return i
			}
		}
		return -1
	}
	locktest.WaitFor(t, 5*time.Second, "the waiter's sharded subscription", func() bool { return subscribedOn() >= 0 })
	move := newSlotMove(ctx, t, cluster, key, subscribedOn())
	move.all()
	locktest.WaitFor(t, 10*time.Second, "the waiter subscribed on the slot's new master", func() bool { return subscribedOn() == move.dst })

	released := time.Now()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expectHandoff(t, got, released, time.Second, 15*time.Second,
		"hand-off after the slot moved: the waiter's subscription did not follow it", "no hand-off within 15s after the slot moved")
}

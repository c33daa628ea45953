package chaos

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// keyPerMaster returns one lock key per master of c, in c.Masters' order:
// a master answers a key of its own slots without MOVED.
func keyPerMaster(ctx context.Context, t *testing.T, c *redistest.Cluster) []string {
	t.Helper()
	keys := make([]string, len(c.Masters))
	for m, srv := range c.Masters {
		client := srv.Client(t)
		for i := 0; keys[m] == ""; i++ {
			key := "job-" + strconv.Itoa(i)
			if errors.Is(client.Get(ctx, key).Err(), redis.Nil) {
				keys[m] = key
			}
		}
	}
	return keys
}

// heirOf returns victim's replica in c.
func heirOf(ctx context.Context, t *testing.T, c *redistest.Cluster, victim *redistest.Server) *redistest.Server {
	t.Helper()
	for _, r := range c.Replicas {
		if info, err := r.Info(ctx, "replication"); err == nil && info["master_port"] == strconv.Itoa(victim.Port()) {
			return r
		}
	}
	t.Fatalf("no replica of %s", victim)
	return nil
}

// keepGranting takes and releases keys in turn with l, each at once (a
// TryAcquire), until stopped; it returns how many it took and the slowest.
func keepGranting(ctx context.Context, t *testing.T, l *lock.Locker, keys []string) (stop func() (grants int, slowest time.Duration)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var grants int
	var slowest time.Duration
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			key := keys[i%len(keys)]
			start := time.Now()
			lease, err := l.TryAcquire(ctx, key)
			if err != nil {
				t.Errorf("%s, on a shard that did not fail: %v", key, err)
				return
			}
			slowest = max(slowest, time.Since(start))
			grants++
			if err := lease.Release(ctx); err != nil {
				t.Errorf("%s: %v", key, err)
				return
			}
		}
	})
	return func() (int, time.Duration) {
		close(done)
		wg.Wait()
		return grants, slowest
	}
}

// firstAnswer tries key until the server owning it answers (the cluster
// client learns of a new master only from a fresh CLUSTER SLOTS), and
// returns the quarantine it reported and when that attempt was sent. A
// grant fails t: the key's record names the failed master.
func firstAnswer(ctx context.Context, t *testing.T, cc *redis.ClusterClient, l *lock.Locker, key string) (left time.Duration, sent time.Time) {
	t.Helper()
	var lastErr error
	waitFor(t, 30*time.Second, "an answer from the failed shard's new master", func() bool {
		sent = time.Now()
		_, err := l.TryAcquire(ctx, key)
		var na *lock.NotAcquiredError
		switch {
		case err == nil:
			t.Fatalf("%s granted at once on the promoted replica, without quarantine", key)
		case errors.As(err, &na):
			left = na.Quarantine
			return true
		}
		if lastErr == nil {
			t.Logf("until the client finds the new master: %v", err)
		}
		lastErr = err
		cc.ReloadState(ctx)
		return false
	})
	return left, sent
}

// Redis Cluster, one shard failing over: its master is SIGKILLed and its
// replica takes over after cluster-node-timeout. The other shards' keys
// keep being granted at once all along, never quarantined (with
// cluster-require-full-coverage no, so that they serve while a shard is
// down); the failed shard's key, whose epoch record reached the replica,
// is quarantined for its TTL + cutoff + 2 %. A SIGKILLed master accepts
// nothing after it dies, so any cutoff is sound here.
func TestQuarantineClusterShardFailover(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	const ttl, cutoff = time.Second, 2 * time.Second
	c := redistest.StartCluster(t, redistest.WithClusterReplicas(1), redistest.WithConfig("--cluster-require-full-coverage", "no"))
	cc := c.Client(t)
	keys := keyPerMaster(ctx, t, c)
	l := newLocker(t, cc, lock.WithTTL(ttl), lock.WithRetryBackoff(time.Millisecond, 20*time.Millisecond),
		lock.WithFailoverQuarantine(cutoff, lock.MissingEpochIsNew))
	for _, key := range keys {
		lease, err := l.TryAcquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.Masters {
		waitFor(t, 10*time.Second, m.String()+"'s replica caught up", func() bool {
			info, err := m.Info(ctx, "replication")
			return err == nil && strings.Contains(info["slave0"], "offset="+info["master_repl_offset"]+",")
		})
	}
	victim := c.Masters[0]
	heir := heirOf(ctx, t, c, victim)
	stop := keepGranting(ctx, t, l, keys[1:])
	killed := time.Now()
	victim.Kill()
	waitFor(t, 30*time.Second, heir.String()+" promoted", func() bool {
		info, err := heir.Info(ctx, "replication")
		return err == nil && info["role"] == "master"
	})
	promoted := time.Since(killed)
	left, sent := firstAnswer(ctx, t, cc, l, keys[0])
	lease, err := l.Acquire(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(sent)
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	grants, slowest := stop()

	want := protocol.Quarantine{On: true, Cutoff: cutoff}.Length(ttl)
	t.Logf("replica promoted %v after the kill; %s: quarantine reported %v, waited %v (rule: %v); other shards: %d grants meanwhile, slowest %v",
		promoted.Round(time.Millisecond), keys[0], left, waited.Round(time.Millisecond), want, grants, slowest.Round(100*time.Microsecond))
	switch {
	case left < want-20*time.Millisecond || left > want:
		t.Errorf("quarantine reported %v, want %v", left, want)
	case waited < left-2*time.Millisecond || waited >= want+2*time.Second:
		t.Errorf("waited %v for a quarantine of %v", waited, left)
	case grants == 0:
		t.Error("the other shards granted nothing during the failover")
	}
}

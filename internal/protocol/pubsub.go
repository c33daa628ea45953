package protocol

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotMapReload is how long a ClusterClient is given to reload its slot
// map (ReloadState) before a sharded subscription whose slot moved is made
// again: go-redis binds a subscription to the node its map names.
const SlotMapReload = 100 * time.Millisecond

// ShardedPubSub reports whether c is a ClusterClient whose servers know
// sharded pub/sub (SSUBSCRIBE, Redis 7.0 and later; COMMAND INFO answers
// nil for a command a server does not know). There the scripts publish a
// key's messages with SPUBLISH (AcquireArgs.Sharded), and whoever listens
// on its events channel must subscribe with SSUBSCRIBE. An error answers
// false: classic pub/sub, as the scripts fall back to when SPUBLISH is
// unknown (messages are hints; a missed one costs latency).
func ShardedPubSub(ctx context.Context, c redis.UniversalClient) bool {
	if _, ok := c.(*redis.ClusterClient); !ok {
		return false
	}
	info, err := c.Do(ctx, "COMMAND", "INFO", "SSUBSCRIBE").Slice()
	return err == nil && len(info) == 1 && info[0] != nil
}

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
// on its events channel must subscribe with SSUBSCRIBE; elsewhere the
// scripts fall back to PUBLISH. An error means the question could not be
// asked: the caller asks again later rather than settle on an answer.
func ShardedPubSub(ctx context.Context, c redis.UniversalClient) (bool, error) {
	if _, ok := c.(*redis.ClusterClient); !ok {
		return false, nil
	}
	info, err := c.Do(ctx, "COMMAND", "INFO", "SSUBSCRIBE").Slice()
	if err != nil {
		return false, err
	}
	return len(info) == 1 && info[0] != nil, nil
}

package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// backend is one topology's half of the protocol: a single Redis (standalone,
// failover or cluster client) or a Redlock set of independent nodes.
type backend interface {
	acquire(ctx context.Context, key, value string, ttl time.Duration) (attempt, error)
	// renew extends the key if it is still ours; false when it is not.
	renew(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// release deletes the key if it is still ours; false when it was not.
	release(ctx context.Context, key, value string) (bool, error)
	// subscribers are the clients whose pub/sub carries the keys' events.
	subscribers() []redis.UniversalClient
	// inspect reads the key's holder, TTL and fence counter.
	inspect(ctx context.Context, key string) (Holding, error)
	// close waits (bounded by ctx) for requests still in flight.
	close(ctx context.Context)
}

// attempt is the server's answer to one acquisition attempt.
type attempt struct {
	acquired  bool
	fence     uint64        // when acquired
	holderTTL time.Duration // when not acquired: the holder's PTTL
}

package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Holder is what one server says about a lock, without its value.
type Holder struct {
	// Held is true when the lock key exists.
	Held bool
	// Identity is the holder's identity from the lock value; "" when the
	// key is free or holds a value this library did not write.
	Identity string
	// TTL is the key's remaining time to live when held (negative: no TTL).
	TTL time.Duration
	// FenceSet is true when the fence counter exists; Fence is its value.
	FenceSet bool
	Fence    uint64
}

// ReadHolder reads the lock key, its PTTL and its fence counter in one
// round trip. The value is reduced to its identity here and goes no further:
// errors carry the server's reply (WRONGTYPE...), never the value.
func ReadHolder(ctx context.Context, c redis.Cmdable, key string) (Holder, error) {
	holders, errs := ReadHolders(ctx, c, []string{key})
	return holders[0], errs[0]
}

// ReadHolders is ReadHolder for many keys of one server in one pipelined
// round trip: holders[i] and errs[i] are what ReadHolder(keys[i]) returns.
func ReadHolders(ctx context.Context, c redis.Cmdable, keys []string) (holders []Holder, errs []error) {
	type reads struct{ value, pttl, fence *redis.Cmd }
	cmds := make([]reads, len(keys))
	// The pipeline's own error is the first failed command's; each key's
	// error comes from its commands below.
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			cmds[i] = reads{p.Do(ctx, "GET", key), p.Do(ctx, "PTTL", key), p.Do(ctx, "GET", FenceKey(key))}
		}
		return nil
	})
	holders, errs = make([]Holder, len(keys)), make([]error, len(keys))
	for i, key := range keys {
		holders[i], errs[i] = holderFrom(key, cmds[i].value, cmds[i].pttl, cmds[i].fence)
	}
	return holders, errs
}

// holderFrom reads one key's replies.
func holderFrom(key string, value, pttl, fence *redis.Cmd) (Holder, error) {
	for _, c := range []*redis.Cmd{value, pttl, fence} {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return Holder{}, fmt.Errorf("reading lock %q: %w", key, err)
		}
	}
	var h Holder
	if v, err := value.Text(); err == nil {
		h.Held, h.Identity = true, IdentityFromValue(v)
		ms, _ := pttl.Int64()
		h.TTL = time.Duration(ms) * time.Millisecond
	}
	if f, err := fence.Text(); err == nil {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return h, fmt.Errorf("the fence counter %s is not a number", FenceKey(key))
		}
		h.FenceSet, h.Fence = true, n
	}
	return h, nil
}

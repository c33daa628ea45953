package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// Holder is what a server says about a lock: who holds it and its fence
// counter. It never carries the lock value.
type Holder struct {
	// Held is true when the lock key exists.
	Held bool
	// Identity is the holder's identity from the lock value; "" for a value
	// this library did not write.
	Identity string
	// FenceSet is true when the fence counter exists.
	FenceSet bool
	// Fence is the fence counter.
	Fence uint64
}

// ReadHolder reads the lock key and its fence counter (one round trip). The
// value is reduced to its identity here and goes no further.
func ReadHolder(ctx context.Context, c *redis.Client, key string) (Holder, error) {
	var val, fence *redis.StringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		val = p.Get(ctx, key)
		fence = p.Get(ctx, lock.FenceKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		// go-redis errors carry the server's reply (WRONGTYPE...), never
		// the value.
		return Holder{}, fmt.Errorf("reading the lock key: %w", err)
	}
	var h Holder
	switch v, err := val.Result(); {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return Holder{}, fmt.Errorf("reading the lock key: %w", err)
	default:
		h.Held, h.Identity = true, lock.IdentityFromValue(v)
	}
	switch f, err := fence.Result(); {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return Holder{}, fmt.Errorf("reading the fence counter: %w", err)
	default:
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return Holder{}, fmt.Errorf("the fence counter %s is not a number", lock.FenceKey(key))
		}
		h.FenceSet, h.Fence = true, n
	}
	return h, nil
}

// RaiseFence raises key's fence counter to at least fence (never lowers it)
// and reports whether it was raised.
func RaiseFence(ctx context.Context, c *redis.Client, key string, fence uint64) (bool, error) {
	return lock.RaiseFence(ctx, c, key, fence)
}

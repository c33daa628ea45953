package protocol

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The scripts are the Redis half of the protocol. go-redis runs them with
// EVALSHA and falls back to EVAL once per server.
var (
	//go:embed lua/acquire.lua
	acquireSrc string
	// AcquireScript: KEYS lock key, fence counter, events channel; ARGV
	// value, ttl (ms), "1" to increment the fence, identity. Replies {1,
	// fence} when acquired, {0, pttl} when held, or an error with the lock
	// key not set.
	AcquireScript = redis.NewScript(acquireSrc)

	//go:embed lua/release.lua
	releaseSrc string
	// ReleaseScript: KEYS lock key, events channel; ARGV value. Replies 1
	// when released, 0 when the key was no longer ours.
	ReleaseScript = redis.NewScript(releaseSrc)

	//go:embed lua/renew.lua
	renewSrc string
	// RenewScript: KEYS lock key; ARGV value, ttl (ms). Replies 1 when
	// extended, 0 when the key was no longer ours.
	RenewScript = redis.NewScript(renewSrc)

	//go:embed lua/raise_fence.lua
	raiseFenceSrc    string
	raiseFenceScript = redis.NewScript(raiseFenceSrc)
)

// AcquireKeys are the KEYS of AcquireScript for lock key.
func AcquireKeys(key string) []string { return []string{key, FenceKey(key), EventsChannel(key)} }

// Release deletes key if it still holds value and announces it; false when
// the key was no longer ours.
func Release(ctx context.Context, c redis.Scripter, key, value string) (bool, error) {
	n, err := ReleaseScript.Run(ctx, c, []string{key, EventsChannel(key)}, value).Int64()
	if err != nil {
		return false, fmt.Errorf("release %q: %w", key, err)
	}
	return n == 1, nil
}

// ErrFenceRange reports a fence above MaxFence, which Lua could not hold
// exactly.
var ErrFenceRange = errors.New("fence above 2^53-1, the largest exact Lua number")

// RaiseFence sets key's fence counter to at least fence and reports whether
// it was raised. It never lowers a counter. Redlock's write-back and the
// controller's fence floor use it.
func RaiseFence(ctx context.Context, c redis.Scripter, key string, fence uint64) (bool, error) {
	if fence > MaxFence {
		return false, fmt.Errorf("raising the fence of %q to %d: %w", key, fence, ErrFenceRange)
	}
	n, err := raiseFenceScript.Run(ctx, c, []string{FenceKey(key)}, strconv.FormatUint(fence, 10)).Int()
	if err != nil {
		return false, fmt.Errorf("raising the fence of %q: %w", key, err)
	}
	return n == 1, nil
}

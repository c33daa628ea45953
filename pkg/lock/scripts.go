package lock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts are the Redis half of the protocol (README "Redis format").
// go-redis runs them with EVALSHA and falls back to EVAL once per server.
var (
	//go:embed lua/acquire.lua
	acquireSrc    string
	acquireScript = redis.NewScript(acquireSrc)

	//go:embed lua/release.lua
	releaseSrc    string
	releaseScript = redis.NewScript(releaseSrc)

	//go:embed lua/renew.lua
	renewSrc    string
	renewScript = redis.NewScript(renewSrc)

	//go:embed lua/raise_fence.lua
	raiseFenceSrc    string
	raiseFenceScript = redis.NewScript(raiseFenceSrc)
)

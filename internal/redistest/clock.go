package redistest

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// jumpClockScript shrinks every TTL in the selected database by ARGV[1]
// milliseconds and deletes the keys that would have expired. One script is
// atomic, so no command observes a half-jumped keyspace. The flags let it
// touch keys of many slots on a cluster node and run when the node is out of
// memory, since it only frees.
var jumpClockScript = redis.NewScript(`#!lua flags=allow-cross-slot-keys,allow-oom
local d = tonumber(ARGV[1])
local n = 0
for _, k in ipairs(redis.call('KEYS', '*')) do
  local ttl = redis.call('PTTL', k)
  if ttl > 0 then
    if ttl <= d then
      redis.call('DEL', k)
    else
      redis.call('PEXPIRE', k, ttl - d)
    end
    n = n + 1
  end
end
return n
`)

// JumpClock simulates this node's wall clock leaping forward by d. Redis
// expires keys by wall clock, so after a leap every key with a TTL has d less
// to live: JumpClock shrinks each remaining TTL by d and deletes the keys
// whose PTTL is <= d, in one Lua script (KEYS + PTTL + PEXPIRE/DEL), so the
// change is atomic. Keys without TTL are untouched.
//
// It works on every server, Debian's included, where the real thing
// (libfaketime, StartWithSteppableClock) hangs at start. The simulation
// covers what matters to a lock's expiry, the keys' remaining lifetimes;
// TIME and the server's own timers are unchanged.
//
// It acts on database 0 of a writable node (standalone, master, cluster
// master); a read-only replica refuses the script. The changes are
// replicated, so a master's replicas follow its jump. d must be at least 1 ms.
func (s *Server) JumpClock(ctx context.Context, d time.Duration) error {
	ms := d.Milliseconds()
	if ms < 1 {
		return fmt.Errorf("redistest: JumpClock(%v): the jump must be at least 1ms forward", d)
	}
	c := s.adminClient()
	defer func() { _ = c.Close() }()
	if err := jumpClockScript.Run(ctx, c, nil, ms).Err(); err != nil {
		return fmt.Errorf("redistest: JumpClock on %s: %w", s, err)
	}
	return nil
}

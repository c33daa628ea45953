-- The uncontended attempt of lua/acquire.lua (protocol 7), run before
-- every piece is defined: a script run with EVALSHA defines every piece it
-- uses on every call, which costs the server more than the commands of an
-- uncontended cycle (docs/benchmarks.md), and an attempt that takes a free
-- key needs none of them. So a first attempt (not queued) without FIFO,
-- announcement or failover quarantine tries SET NX here and, when it takes
-- the key, returns with its fence, exactly as lua/acquire.lua would
-- (lease_taken without a message, no epoch record): the INCR's reply when
-- it is a token lua/fence.lua's fence_checked would keep as it is (above
-- 1, exact in a double). Any other reply (a new counter's 1, an error, a
-- token out of range) is left in fast_fence for lua/acquire.lua, which
-- finishes with fence_checked. Otherwise fast_tried says whether SET NX
-- already failed, and lua/acquire.lua goes on without trying it again.
local fast_tried, fast_fence = false, nil
if ARGV[7] ~= '1' and ARGV[8] ~= '1' and ARGV[5] ~= '1' and not tonumber(ARGV[11] or '') then
  fast_tried = true
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if ARGV[3] ~= '1' then return {1, 0} end
    fast_fence = redis.pcall('INCR', KEYS[2])
    if type(fast_fence) == 'number' and fast_fence > 1 and fast_fence <= 9007199254740991 then
      return {1, fast_fence}
    end
  end
end

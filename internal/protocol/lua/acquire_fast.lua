-- The uncontended attempt of lua/acquire.lua (protocol 7), run before the
-- pieces after lua/fence.lua are defined: a script run with EVALSHA
-- defines every piece it uses on every call, which costs the server more
-- than the commands of an uncontended cycle (docs/benchmarks.md), and an
-- attempt that takes a free key needs none of them. So a first attempt
-- (not queued) without FIFO, announcement or failover quarantine tries
-- SET NX here and, when it takes the key, returns with its fence, exactly
-- as lua/acquire.lua would (lease_taken without a message, no epoch
-- record). Otherwise fast_tried says whether SET NX already failed, and
-- lua/acquire.lua goes on without trying it again.
local fast_tried = false
if ARGV[7] ~= '1' and ARGV[8] ~= '1' and ARGV[5] ~= '1' and not tonumber(ARGV[11] or '') then
  fast_tried = true
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local fence, err = fence_grant(ARGV, KEYS[2], function() redis.call('DEL', KEYS[1]) end)
    if not fence then return err end
    return {1, fence}
  end
end

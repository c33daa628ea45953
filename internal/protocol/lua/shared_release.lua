-- Release a shared hold (protocol 7): remove it only if the value holds it;
-- the last shared holder to go hands the key to the first waiter in line
-- (an exclusive waiter: the key, in this one round trip), as a lock's
-- release does; a waiter giving up leaves the line.
-- KEYS and ARGV as lua/release.lua's, and left out as its caller leaves
-- them out (protocol.ReleaseShared sends what protocol.Release sends).
-- Returns 1 when released, 0 when the value held no live shared hold.
local key, channel, line, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value = ARGV[1]
events_sharded = ARGV[4] == '1'
local score = redis.pcall('ZSCORE', key, value) -- a lock's string: WRONGTYPE, no hold
local now = epoch_now()
if type(score) ~= 'string' or not shared_kind(score) or tonumber(score) <= now then
  redis.call('ZREM', line, value)
  return 0
end
redis.call('ZREM', key, value)
if redis.call('ZCARD', key) > 0 then
  -- Holds that expired are no holds: K with only those must not keep the
  -- writer waiting until K's own expiry.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('EXISTS', key) == 1 then
    shared_expire(key, now)
    return 1
  end
end
local popped = redis.call('ZPOPMIN', line)
if popped[1] and epoch_check(KEYS[5], tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or ''), ARGV[7] == '1', true) > 0 then
  redis.call('ZADD', line, popped[2], popped[1])
  popped = {}
end
if popped[1] then
  line_hand(key, counter, channel, line, popped, ARGV[2])
elseif ARGV[3] == '1' then
  events_publish(channel, 'released')
end
return 1

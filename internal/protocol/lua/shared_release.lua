-- Release a shared hold (protocol 7): remove it only if the value holds it;
-- the last shared holder to go hands the key to the first waiter in line
-- (an exclusive waiter: the key, in this one round trip), as a lock's
-- release does; a waiter giving up leaves the line.
-- KEYS as lua/release.lua's ([1] lock key, [2] events channel, [3]
-- waiting line, [4] fence counter, [5] epoch record), then [6] holders
-- ARGV as lua/release.lua's: [1] value, [2] hand-off window (ms), [3] "1"
-- to announce "released" when nobody waits, [4] "1" on Redis Cluster,
-- [5] the TTL (ms), [6] and [7] the failover quarantine's.
-- Returns 1 when released, 0 when the value held no live shared hold.
local key, channel, line, counter, holders = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
local value = ARGV[1]
events_sharded = ARGV[4] == '1'
local score = redis.call('TYPE', key)['ok'] == 'zset' and redis.call('ZSCORE', key, value)
local now = epoch_now()
if not score or not shared_kind(score) or tonumber(score) <= now then
  redis.call('ZREM', line, value)
  return 0
end
redis.call('ZREM', key, value)
redis.call('HDEL', holders, value)
permits_purge(key, holders, now)
if redis.call('EXISTS', key) == 1 then
  shared_expire(key, holders, now)
  return 1
end
redis.call('DEL', holders)
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

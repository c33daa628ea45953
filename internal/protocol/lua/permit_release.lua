-- Release a permit (protocol 3): remove it only if the value holds it, and
-- hand the permits now free to the first waiters in line; a waiter giving
-- up leaves the line.
-- KEYS[1] semaphore key, KEYS[2] events channel, KEYS[3] the semaphore's
-- waiting line, KEYS[4] holders, KEYS[5] fence counter (protocol 4: each
-- hand-off is counted, lua/line.lua's line_counted), KEYS[6] epoch record
-- (lua/epoch.lua)
-- ARGV[1] value, ARGV[2] hand-off window (ms), ARGV[3] "1" to announce
-- "released" when nobody waits, ARGV[4] the number of permits, ARGV[5] "1"
-- on Redis Cluster (messages on sharded pub/sub), ARGV[6] the semaphore's
-- TTL (ms), ARGV[7] and ARGV[8] the failover quarantine's (protocol 5): a
-- release that would hand a permit over checks the epoch first, and during
-- a quarantine hands none, and its waiters keep their places
-- Returns 1 when released, 0 when the value held no permit.
local key, channel, line, holders, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local value, window, permits = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
events_sharded = ARGV[5] == '1'
if permits_other_kind(key) then
  redis.call('ZREM', line, value)
  return 0
end
local now = permits_now()
permits_purge(key, holders, now)
if not redis.call('ZSCORE', key, value) then
  redis.call('ZREM', line, value)
  return 0
end
redis.call('ZREM', key, value)
redis.call('HDEL', holders, value)
local count, handed = redis.call('ZCARD', key), false
local checked = false
while count < permits do
  local popped = redis.call('ZPOPMIN', line)
  local head = popped[1]
  if not head then break end
  if not checked and epoch_check(KEYS[6], tonumber(ARGV[6] or '0'), tonumber(ARGV[7] or ''), ARGV[8] == '1', true) > 0 then
    redis.call('ZADD', line, popped[2], head)
    break
  end
  checked = true
  permits_hand_over(key, counter, holders, channel, line, head, now, window)
  count, handed = count + 1, true
end
if not handed and ARGV[3] == '1' then events_publish(channel, 'released') end
permits_expire(key, holders, now)
return 1

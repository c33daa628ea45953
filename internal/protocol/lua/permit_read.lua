-- Read a semaphore's holders (protocol 3) without changing anything.
-- KEYS[1] semaphore key, KEYS[2] holders, KEYS[3] fence counter
-- Returns {now ms, {value, expiry ms, ...} of the live permits by expiry,
-- {value, "<fence> <since ms>", ...} of the confirmed holders, the fence
-- counter or ""}, or an error when a lock holds the key.
local key, holders, counter = KEYS[1], KEYS[2], KEYS[3]
if permits_is_lock(key) then
  return redis.error_reply('WRONGTYPE redlease: ' .. key .. ' holds a lock, not a semaphore')
end
local now = permits_now()
local live = redis.call('ZRANGEBYSCORE', key, string.format('(%.0f', now), '+inf', 'WITHSCORES')
return {now, live, redis.call('HGETALL', holders), redis.call('GET', counter) or ''}

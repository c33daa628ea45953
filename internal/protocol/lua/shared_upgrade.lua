-- Upgrade a shared hold to the exclusive one (protocol 7), without letting
-- go: in one atomic run the caller's shared hold becomes the lock, or
-- nothing changes. It never waits, so two holders upgrading at once
-- cannot deadlock: each finds the other and is refused.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] epoch record
-- (lua/epoch.lua)
-- ARGV[1] value, ARGV[2] ttl (ms), ARGV[3] "1" to take the next fence,
-- ARGV[4] and ARGV[5] the failover quarantine's (as lua/acquire.lua's
-- ARGV[11] and [12]; '' and "0" without one).
-- Returns {1, fence} when the value now holds the key exclusively for ttl
-- (fence: the next, as an exclusive grant's; 0 without fencing); {0, n}
-- when n other shared holders hold it (n is 0 during a failover
-- quarantine), nothing changed; {-1} when the value holds no live shared
-- hold; or an error with nothing changed.
local key, counter = KEYS[1], KEYS[2]
local value, ttl = ARGV[1], tonumber(ARGV[2])
if redis.call('TYPE', key)['ok'] ~= 'zset' then return {-1} end
local now = epoch_now()
local expiry = redis.call('ZSCORE', key, value)
if not expiry or not shared_kind(expiry) or tonumber(expiry) <= now then return {-1} end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local others = redis.call('ZCARD', key) - 1
if others > 0 then return {0, others} end
if epoch_check(KEYS[3], ttl, tonumber(ARGV[4] or ''), ARGV[5] == '1', true) > 0 then return {0, 0} end
local fence = 0
if ARGV[3] == '1' then
  local err
  fence, err = next_fence(counter)
  if not fence then return err end
end
redis.call('DEL', key)
redis.call('SET', key, value, 'PX', ttl)
return {1, fence}

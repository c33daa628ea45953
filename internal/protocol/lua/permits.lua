-- The holders of a semaphore (protocol 3; prepended, after line.lua, to the
-- permit scripts by internal/protocol/scripts.go).
--
-- The semaphore key K is a sorted set of the values holding a permit,
-- scored by when each permit expires (the server's clock in milliseconds);
-- HOLDERS ({K}:holders) maps each confirmed holder's value to
-- "<fence> <since>" (its token, and the server's clock in ms when it took
-- the permit). A permit handed to a waiter and not yet confirmed is in K
-- only. An entry whose expiry has passed is no permit: every script that
-- counts or hands out permits removes those first (permits_purge), and K
-- and HOLDERS expire as a whole with their last permit (permits_expire).
-- The caller says how many permits the semaphore has: a script admits a
-- holder only while fewer than that many live entries are in K, and never
-- removes a live one, so lowering the count revokes nothing.

-- permits_now is the server's clock in milliseconds (exact in a Lua
-- double: about 1.8e12 today).
local function permits_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- permits_other_kind reports a K that a lock holds (or was handed to a
-- lock waiter): a string, not a holder set; or that is held shared (a
-- holder set whose scores say so, lua/shared.lua: protocol 7). It is
-- neither taken nor changed.
local function permits_other_kind(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'zset' then return kind == 'string' end
  return shared_kind(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
end

-- permits_purge removes the entries that expired by now.
local function permits_purge(key, holders, now)
  local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    for _, v in ipairs(gone) do redis.call('HDEL', holders, v) end
  end
end

-- permits_expire makes K and HOLDERS expire with K's last entry.
local function permits_expire(key, holders, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if last then
    local ms = tonumber(last) - now
    redis.call('PEXPIRE', key, ms)
    redis.call('PEXPIRE', holders, ms)
  end
end

-- permits_hand_over gives head, a waiter just taken off the line, a permit
-- for window ms, counts the hand-off (its fence, recorded in HOLDERS), and
-- tells it (line_grant) with the number of live permits.
local function permits_hand_over(key, counter, holders, channel, line, head, now, window)
  redis.call('ZADD', key, now + window, head)
  local tail, fence = line_counted(counter, window, redis.call('ZCARD', key))
  if fence then redis.call('HSET', holders, head, string.format('%.0f %.0f', fence, now)) end
  line_grant(channel, line, head, tail)
end


-- Acquire: one round trip, atomic on the server.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] events channel
-- ARGV[1] value, ARGV[2] ttl (ms), ARGV[3] "1" to increment the fence, ARGV[4] identity
-- Returns {1, fence} when acquired (fence 0 without fencing), {0, pttl} when held
-- (pttl -1: the key has no TTL), or an error with the lock key NOT set.
--
-- A script is atomic against other clients, but Redis does not roll back
-- its writes when it fails halfway. So every write after the SET goes
-- through redis.pcall, and on any error the SET is undone before the error
-- is returned: a failed attempt never leaves a key locked by nobody.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end

local function undo(reply)
  redis.call('DEL', KEYS[1])
  return reply
end

local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

local fence = 0
if ARGV[3] == '1' then
  local cur = redis.pcall('GET', KEYS[2])
  if failed(cur) then return undo(cur) end
  if not cur then
    -- A missing counter (new lock, or the server lost its data) starts at
    -- the server's clock in microseconds, above every token handed out
    -- before unless the clock went back. TIME's two halves are strings:
    -- concatenating keeps the value exact (no float formatting).
    local t = redis.call('TIME')
    cur = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
    local ok = redis.pcall('SET', KEYS[2], cur)
    if failed(ok) then return undo(ok) end
  end
  -- Lua numbers are doubles: tokens stay exact only below 2^53. A counter
  -- that is not a plain decimal integer below 2^53 - 1 is refused before
  -- INCR could fail or hand out an inexact token.
  if not string.match(cur, '^[0-9]+$') or #cur > 16 or tonumber(cur) >= 9007199254740991 then
    return undo(redis.error_reply('ERR redlease: fence counter ' .. KEYS[2] ..
      ' is not an integer below 2^53-1; fix or delete it (the controller raises it back to its floor)'))
  end
  fence = redis.pcall('INCR', KEYS[2])
  if failed(fence) then return undo(fence) end
end
local sent = redis.pcall('PUBLISH', KEYS[3], 'acquired ' .. ARGV[4])
if failed(sent) then return undo(sent) end
return {1, fence}

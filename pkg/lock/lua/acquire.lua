-- Acquire: one round trip, atomic on the server.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] events channel
-- ARGV[1] value, ARGV[2] ttl (ms), ARGV[3] "1" to increment the fence, ARGV[4] identity
-- Returns {1, fence} when acquired (fence 0 without fencing), {0, pttl} when held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = 0
  if ARGV[3] == '1' then
    if redis.call('EXISTS', KEYS[2]) == 0 then
      -- A missing counter (new lock, or the server lost its data) starts at
      -- the server's clock in microseconds, above every token handed out
      -- before unless the clock went back. TIME's two halves are strings:
      -- concatenating keeps the value exact (no float formatting).
      local t = redis.call('TIME')
      redis.call('SET', KEYS[2], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
    end
    fence = redis.call('INCR', KEYS[2])
  end
  redis.call('PUBLISH', KEYS[3], 'acquired ' .. ARGV[4])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}

-- Raise a fence counter to at least ARGV[1] (Redlock write-back; the
-- controller's floor). Never lowers it.
-- KEYS[1] fence counter; ARGV[1] token (decimal, no leading zeros, below 2^53)
-- Counters are compared as decimal strings, by length then lexically:
-- exact for canonical integers whatever their size, so any other token
-- (leading zeros, signs, exponents) is refused, never compared.
local t = ARGV[1]
if not (t == '0' or string.match(t, '^[1-9][0-9]*$')) then
  return redis.error_reply('ERR redlease: fence ' .. t .. ' is not a canonical decimal integer')
end
if #t > 16 or tonumber(t) > 9007199254740991 then
  return redis.error_reply('ERR redlease: fence ' .. t .. ' is above 2^53-1, the largest exact Lua number')
end
local cur = redis.call('GET', KEYS[1])
if (not cur) or #cur < #t or (#cur == #t and cur < t) then
  redis.call('SET', KEYS[1], t)
  return 1
end
return 0

-- Fenced write: accept only a token greater than the last accepted one.
-- KEYS[1] resource hash; ARGV[1] token (decimal, no leading zeros), ARGV[2] value
-- Returns {"1", token} when accepted, {"0", current} when stale.
-- Tokens are compared as decimal strings (length, then bytes) so every
-- uint64 compares exactly; Lua numbers are doubles and lose precision past 2^53.
-- Any other token (leading zeros, a sign) would compare wrong by length,
-- so it is refused, never stored.
local t = ARGV[1]
if not (t == '0' or string.match(t, '^[1-9][0-9]*$')) then
  return redis.error_reply('ERR redlease: fence token ' .. t .. ' is not a canonical decimal integer')
end
local cur = redis.call('HGET', KEYS[1], 'token')
if cur then
  if #t < #cur or (#t == #cur and t <= cur) then
    return {'0', cur}
  end
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return {'1', ARGV[1]}

-- Fenced write: accept only a token greater than the last accepted one.
-- KEYS[1] resource hash; ARGV[1] token (decimal, no leading zeros), ARGV[2] value
-- Returns {"1", token} when accepted, {"0", current} when stale.
-- Tokens are compared as decimal strings (length, then bytes) so every
-- uint64 compares exactly; Lua numbers are doubles and lose precision past 2^53.
local cur = redis.call('HGET', KEYS[1], 'token')
if cur then
  local t = ARGV[1]
  if #t < #cur or (#t == #cur and t <= cur) then
    return {'0', cur}
  end
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return {'1', ARGV[1]}

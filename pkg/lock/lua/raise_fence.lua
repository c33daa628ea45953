-- Raise a fence counter to at least ARGV[1] (Redlock write-back; the
-- controller's floor). Never lowers it.
-- KEYS[1] fence counter; ARGV[1] token (decimal, no leading zeros)
-- Counters are compared as decimal strings: exact for every uint64.
local cur = redis.call('GET', KEYS[1])
local t = ARGV[1]
if (not cur) or #cur < #t or (#cur == #t and cur < t) then
  redis.call('SET', KEYS[1], t)
  return 1
end
return 0

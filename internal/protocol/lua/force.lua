-- Force (break-glass, breaks exclusion, kept safe by fences): raise the
-- fence counter above the revoked holder's fence, then delete the key, in
-- one script, and say "released" on the events channel so waiters try
-- again at once. The revoked holder may still believe it holds the lock
-- until its next renewal; every fenced store refuses its writes once the
-- next holder (whose fence is above the raised counter) has written.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] events channel
-- ARGV[1] the holder's identity ('' for whoever holds it; a revoke's
-- tombstone always matches), ARGV[2] the fence counter as the requester
-- saw it ('' for any), ARGV[3] a floor ('' for none: the controller's
-- highest fence seen, in case the counter went back), ARGV[4] "1" on
-- Redis Cluster (sharded pub/sub). The counter is raised to one above the
-- greater of itself and the floor (from the server's clock in
-- microseconds, as a new counter starts, when both are missing).
-- Returns {1, identity, counter before, counter after} when forced, {0,
-- reason, identity, counter} when nothing changed; reason: free,
-- semaphore, holder, fence, range (a counter or fence not an integer below
-- 2^53-1).
local key, counter, channel = KEYS[1], KEYS[2], KEYS[3]
events_sharded = ARGV[4] == '1'
local fence = redis.call('GET', counter) or ''
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then return {0, 'free', '', fence} end
if kind ~= 'string' then return {0, 'semaphore', '', fence} end
local v = redis.call('GET', key)
local identity = string.match(v, '^(.+)/' .. string.rep('%x', 40) .. '$') or ''
local tombstone = string.sub(identity, 1, 11) == 'revoked-by-'
if ARGV[1] ~= '' and ARGV[1] ~= identity and not tombstone then return {0, 'holder', identity, fence} end
if ARGV[2] ~= '' and ARGV[2] ~= fence then return {0, 'fence', identity, fence} end
local base = 0
for _, s in ipairs({fence, ARGV[3]}) do
  if s ~= '' then
    local n = tonumber(s)
    if not (string.match(s, '^[0-9]+$') and n and n < 9007199254740991) then return {0, 'range', identity, fence} end
    if n > base then base = n end
  end
end
if base == 0 then
  local t = redis.call('TIME')
  base = tonumber(t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
end
local raised = string.format('%.0f', base + 1)
redis.call('SET', counter, raised)
redis.call('DEL', key)
events_pcall(channel, 'released')
return {1, identity, fence, raised}

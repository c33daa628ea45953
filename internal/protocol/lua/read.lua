-- Read a lock's or a semaphore's key without changing anything, bounded:
-- values are cut to a prefix here, on the server, so a tenant's huge value
-- never crosses the network to a reader.
-- KEYS[1] key, KEYS[2] holders (a semaphore's), KEYS[3] fence counter,
-- KEYS[4] epoch record (a lock's, lua/epoch.lua)
-- ARGV[1] bytes of each value to return, ARGV[2] most permits to return
-- Returns {0, counter, quarantine} for no key, {1, counter, value prefix,
-- pttl, quarantine} for a lock's (quarantine: ms left of a failover
-- quarantine the record holds, protocol 5; 0 for none), {2, counter, now ms, live permits, {value prefix, expiry ms, ...}
-- of the first ARGV[2] live permits by expiry, {"<fence> <since ms>" or
-- false, ...} of those}, with the fence counter cut to 24 bytes ("" when
-- there is none), or WRONGTYPE for a key of another type.
local key, holders, counter = KEYS[1], KEYS[2], KEYS[3]
local most, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local fence = string.sub(redis.call('GET', counter) or '', 1, 24)
local kind = redis.call('TYPE', key)['ok']

-- quarantine is the ms left of the quarantine the record holds.
local function quarantine()
  local untill = tonumber(redis.pcall('HGET', KEYS[4], 'until'))
  if not untill then return 0 end
  return math.max(0, untill - epoch_now())
end

if kind == 'none' then
  return {0, fence, quarantine()}
elseif kind == 'string' then
  return {1, fence, string.sub(redis.call('GET', key), 1, most), redis.call('PTTL', key), quarantine()}
elseif kind ~= 'zset' then
  return redis.error_reply('WRONGTYPE redlease: ' .. key .. ' holds neither a lock nor a semaphore')
end
local now = permits_now()
local live = redis.call('ZRANGEBYSCORE', key, string.format('(%.0f', now), '+inf', 'WITHSCORES')
local shown, values = {}, {}
for i = 1, math.min(#live, 2 * limit), 2 do
  values[#values + 1] = live[i]
  shown[#shown + 1] = string.sub(live[i], 1, most)
  shown[#shown + 1] = live[i + 1]
end
local info = {}
if #values > 0 then
  info = redis.call('HMGET', holders, unpack(values))
  for i, v in ipairs(info) do
    if v then info[i] = string.sub(v, 1, 64) end
  end
end
return {2, fence, now, #live / 2, shown, info}

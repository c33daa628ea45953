-- Read a lock's or a semaphore's key without changing anything, bounded:
-- values are cut to a prefix here, on the server, so a tenant's huge value
-- never crosses the network to a reader.
-- KEYS[1] key, KEYS[2] holders (a semaphore's), KEYS[3] fence counter,
-- KEYS[4] epoch record (a lock's, lua/epoch.lua), and with ARGV[3]:
-- KEYS[5] the lock's waiting line, KEYS[6] the semaphore's
-- ARGV[1] bytes of each value to return, ARGV[2] most permits to return,
-- ARGV[3] (optional) most waiters to return
-- Returns {0, counter, quarantine} for no key, {1, counter, value prefix,
-- pttl, quarantine} for a lock's (quarantine: ms left of a failover
-- quarantine the record holds, protocol 5; 0 for none), {2, counter, now ms, live permits, {value prefix, expiry ms, ...}
-- of the first ARGV[2] live permits by expiry, {"<fence> <since ms>" or
-- false, ...} of those}, {3, counter, shared holders, pttl, quarantine}
-- for a key held shared (protocol 7), with the fence counter cut to 24 bytes ("" when
-- there is none), or WRONGTYPE for a key of another type.
-- With ARGV[3] every reply ends with one more item, the waiting line
-- (waiting below); without it the reply is as before, so that a reader
-- that does not ask (an older build of this protocol version calling the
-- library's function) reads what it always read.
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

-- waiting reads both lines of the key (a lock's waiters and a
-- semaphore's: while spec.permits moves between 1 and more, both kinds
-- may wait), bounded: {count, now µs, oldest µs or '', {value prefix,
-- arrival µs, ...}} with the first n waiters by arrival ({0, '', '', {}}
-- when nobody waits). ZCARD counts a
-- line of any length in O(1); only n members are read. An arrival of 0 is
-- a waiter put back at the head with its arrival lost (a semaphore whose
-- permits were lowered): it is listed first, and oldest skips it. So is a
-- ticket (lua/line.lua's line_tickets): a score of at most the counter
-- (plus a kind's fraction) says where a waiter stands, not when it came,
-- and is listed with an arrival of 0; a clock's arrival is far above the
-- counter, which started at the clock when the key first counted. {} when
-- a line cannot be read (a controller user whose ACL predates ZCARD, a
-- line key of another type): the holder is still read.
local function waiting(n)
  -- Nobody waits (the common case): one command, no clock, no member read.
  local lines = redis.pcall('EXISTS', KEYS[5], KEYS[6])
  if lines == 0 then return {0, '', '', {}} end
  local count, counts = 0, {}
  for i = 5, 6 do
    local c = redis.pcall('ZCARD', KEYS[i])
    if type(c) ~= 'number' then return {} end
    count, counts[i] = count + c, c
  end
  if count == 0 then return {0, '', '', {}} end
  local oldest, shown = nil, {}
  local known = (tonumber(fence) or 0) + 1
  for i = 5, 6 do
    if counts[i] > 0 then
      local first = redis.pcall('ZRANGEBYSCORE', KEYS[i], string.format('%.0f', known), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      if first['err'] then return {} end
      if first[2] and (not oldest or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
      if n > 0 then
        local m = redis.pcall('ZRANGEBYSCORE', KEYS[i], '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, n)
        if m['err'] then return {} end
        for j = 1, #m, 2 do shown[#shown + 1] = {m[j], tonumber(m[j + 1])} end
      end
    end
  end
  table.sort(shown, function(a, b) return a[2] < b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  local flat = {}
  for i = 1, math.min(#shown, n) do
    flat[#flat + 1] = string.sub(shown[i][1], 1, most)
    flat[#flat + 1] = shown[i][2] >= known and string.format('%.0f', shown[i][2]) or '0'
  end
  local t = redis.call('TIME')
  return {count, t[1] .. string.rep('0', 6 - #t[2]) .. t[2], oldest and string.format('%.0f', oldest) or '', flat}
end

-- reply is r, then the waiting line when ARGV[3] asks for it.
local function reply(r)
  local n = tonumber(ARGV[3])
  if n then r[#r + 1] = waiting(n) end
  return r
end

if kind == 'none' then
  return reply({0, fence, quarantine()})
elseif kind == 'string' then
  return reply({1, fence, string.sub(redis.call('GET', key), 1, most), redis.call('PTTL', key), quarantine()})
elseif kind ~= 'zset' then
  return redis.error_reply('WRONGTYPE redlease: ' .. key .. ' holds neither a lock nor a semaphore')
end
-- The first entry by score (ZRANGEBYSCORE: a command the controller's
-- user may run, where it may not run ZRANGE).
if shared_kind(redis.call('ZRANGEBYSCORE', key, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0) then
  -- Held shared (protocol 7): how many hold it (expired holds no script
  -- purged yet included) and when the last one expires.
  return reply({3, fence, redis.call('ZCARD', key), redis.call('PTTL', key), quarantine()})
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
return reply({2, fence, now, #live / 2, shown, info})

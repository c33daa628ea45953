-- Acquire a permit of a semaphore (protocol 3): one round trip, atomic on
-- the server.
-- KEYS[1] semaphore key (the holder set), KEYS[2] fence counter, KEYS[3]
-- events channel, KEYS[4] the semaphore's waiting line, KEYS[5] holders,
-- KEYS[6] epoch record (lua/epoch.lua)
-- ARGV[1..9] as lua/acquire.lua's (value, ttl ms, "1" to increment the
-- fence, identity, "1" to announce "acquired <identity>", place ms, "1"
-- when this value may be in the line already, "1" for strict FIFO,
-- hand-off window ms), ARGV[10] the number of permits, ARGV[11] "1" on
-- Redis Cluster (messages on sharded pub/sub), ARGV[12] and ARGV[13] the
-- failover quarantine's, as lua/acquire.lua's ARGV[11] and ARGV[12],
-- ARGV[14] and ARGV[15] as lua/acquire.lua's ARGV[13] and ARGV[14]
-- (protocol 7)
-- Returns {1, fence} when acquired (fence 0 without fencing), {0, ms,
-- counter, quarantine, history, recorded} when not (lua/fence.lua's
-- fence_not_acquired): ms until enough permits expire for one to be free
-- (a lock's PTTL when a lock holds the key, -1 if that has no TTL; while a
-- failover quarantine holds grants back, the ms it has left, which
-- quarantine reports too), the hand-off counter as this attempt saw it and
-- its history (protocol 6); or an error with no permit taken.
local key, counter, channel, line, holders = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local value, ttl = ARGV[1], tonumber(ARGV[2])
local place, queued, fifo = tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8] == '1'
local window, permits = tonumber(ARGV[9]), tonumber(ARGV[10])
events_sharded = ARGV[11] == '1'
local refresh = ARGV[14] ~= '0'
line_tickets = ARGV[15] == '1'

if permits_other_kind(key) then
  if place > 0 then line_join(line, value, place, queued, refresh, false, counter) end
  return fence_not_acquired(counter, redis.call('PTTL', key))
end
local cutoff = tonumber(ARGV[12] or '')
local held_back = epoch_check(KEYS[6], ttl, cutoff, ARGV[13] == '1', false)
local now = permits_now()
permits_purge(key, holders, now)

-- taken runs once value holds a permit until now + ttl, and records its
-- holder; on an error the permit goes again (lua/taken.lua).
local function taken()
  epoch_granted(KEYS[6], ttl, cutoff)
  return lease_taken(ARGV, counter, channel, function()
    redis.call('ZREM', key, value)
    redis.call('HDEL', holders, value)
  end, function(fence)
    -- %.0f writes a double below 2^53 exactly (tostring would round it).
    redis.call('HSET', holders, value, string.format('%.0f %.0f', fence, now))
    permits_expire(key, holders, now)
  end)
end

local count = redis.call('ZCARD', key)
if queued and redis.call('ZSCORE', key, value) then
  -- A release handed this waiter a permit (and took it off the line): this
  -- attempt is the confirming write of a waiter that did not count from the
  -- hand-off (protocol 4), and the lease counts from its sending.
  if count - 1 < permits then
    redis.call('ZADD', key, 'XX', now + ttl, value)
    return taken()
  end
  -- The releaser allows more permits than this caller: the others hold as
  -- many as the caller allows, or more. It gives the permit back and goes
  -- back to the head of the line.
  redis.call('ZREM', key, value)
  redis.call('HDEL', holders, value)
  count = count - 1
  if place > 0 then redis.call('ZADD', line, 0, value) end
end
if held_back > 0 then
  -- A failover quarantine: nothing is granted; a waiter keeps its place
  -- past the quarantine's end, when it tries again.
  if place > 0 then line_join(line, value, place + held_back, queued, true, false, counter) end
  return fence_not_acquired(counter, held_back, held_back, epoch_recorded)
end
-- Strict FIFO: free permits go to the head of the line first, not to the
-- caller, unless the caller is the head.
local handed = false
if fifo then
  while count < permits do
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if not head or head == value then break end
    redis.call('ZREM', line, head)
    permits_hand_over(key, counter, holders, channel, line, head, now, window)
    epoch_granted(KEYS[6], window, cutoff)
    count, handed = count + 1, true
  end
end
if count < permits then
  redis.call('ZADD', key, now + ttl, value)
  if queued then redis.call('ZREM', line, value) end
  return taken()
end
if handed then permits_expire(key, holders, now) end
if place > 0 then line_join(line, value, place, queued, refresh, false, counter) end
-- count - permits + 1 entries must expire before one permit is free.
local nth = redis.call('ZRANGE', key, count - permits, count - permits, 'WITHSCORES')[2]
return fence_not_acquired(counter, tonumber(nth) - now, 0, epoch_recorded)

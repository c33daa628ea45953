-- Acquire (protocols 2, 4, 6 and 7): one round trip, atomic on the server.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] events channel,
-- KEYS[4] waiting line, KEYS[5] epoch record (lua/epoch.lua)
-- ARGV[1] value, ARGV[2] ttl (ms), ARGV[3] "1" to increment the fence,
-- ARGV[4] identity, ARGV[5] "1" to announce "acquired <identity>",
-- ARGV[6] place (ms): 0 = do not queue, else how long the line is kept
-- for this waiter without another attempt, ARGV[7] "1" when this value may
-- be in the line already, ARGV[8] "1" for strict FIFO, ARGV[9] hand-off
-- window (ms), ARGV[10] "1" on Redis Cluster (messages on sharded pub/sub),
-- ARGV[11] the failover quarantine's cutoff (ms; '' for no quarantine),
-- ARGV[12] "1" when a missing epoch record is a loss (protocol 5),
-- ARGV[13] "0" when a waiter keeping its place need not keep the line
-- longer (protocol 7: lua/line.lua's line_join; missing reads as "keep"),
-- ARGV[14] "1" to order the line by ticket (protocol 7: lua/line.lua's
-- line_tickets; missing reads as the clock).
-- A caller leaves out trailing KEYS and ARGV that hold their defaults
-- (protocol.AcquireCall): KEYS[3] and ARGV[4..5] when it does not
-- announce, KEYS[4] and ARGV[6] when it neither queues nor is FIFO,
-- KEYS[5] and ARGV[11..12] without a quarantine, ARGV[9] without FIFO,
-- the flags ARGV[7], [8] and [10] when off, ARGV[13] when it keeps the
-- line, and ARGV[14] by the clock. So this script reads each of them only
-- where it matters, and a missing flag or place as its default.
-- Returns {1, fence} when acquired (fence 0 without fencing), {0, pttl,
-- counter, quarantine, history, recorded} when not (pttl -1: the key has no TTL; a
-- semaphore holding the key: when its last permit expires; counter: the
-- hand-off counter as this attempt saw it, lua/fence.lua's fence_seen;
-- quarantine: the ms left of a failover quarantine that holds grants back,
-- 0 for none; history: the counter's, lua/fence.lua's fence_history;
-- recorded: the longest TTL the epoch record holds, 0 without the
-- quarantine: protocol 6), or an error with the lock key NOT taken.
--
-- A script is atomic against other clients, but Redis does not roll back
-- its writes when it fails halfway: on an error after the key was taken,
-- the key is deleted before the error is returned (lua/taken.lua), so a
-- failed attempt never leaves a key locked by nobody.
--
-- A key this script has seen held (by the confirming GET of a queued
-- attempt, or FIFO's EXISTS) is not tried with SET NX, which would fail
-- (protocol 7).
local key, counter, channel, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value, ttl = ARGV[1], ARGV[2]
local place, queued, fifo = tonumber(ARGV[6] or '0'), ARGV[7] == '1', ARGV[8] == '1'
local refresh = ARGV[13] ~= '0'
line_tickets = ARGV[14] == '1'
events_sharded = ARGV[10] == '1'
local cutoff = tonumber(ARGV[11] or '')
local held_back = epoch_check(KEYS[5], tonumber(ttl), cutoff, ARGV[12] == '1', false)

-- taken runs once the key holds value for ttl.
local function taken()
  epoch_granted(KEYS[5], tonumber(ttl), cutoff)
  return lease_taken(ARGV, counter, channel, function() redis.call('DEL', key) end)
end

-- The fast path took the key, and its INCR needs fence_checked: a new
-- counter to start at the clock, or an error (the key is given back).
if fast_fence ~= nil then
  local fence, err = fence_checked(counter, fast_fence)
  if not fence then
    redis.call('DEL', key)
    return err
  end
  return {1, fence}
end

-- held: SET NX is not to be tried, the key having been seen held (by
-- lua/acquire_fast.lua's SET NX, which failed, or below).
local held = fast_tried
if queued then
  local holder = lock_value(key)
  if holder == value then
    -- The previous holder's release handed the key to this waiter (and
    -- took it off the line): this attempt is the confirming write of a
    -- waiter that did not count from the hand-off (protocol 4), and its
    -- lease counts from its sending.
    redis.call('PEXPIRE', key, ttl)
    return taken()
  end
  held = holder ~= false
end
if held_back > 0 then
  -- A failover quarantine: nothing is granted. A waiter keeps its place
  -- past the quarantine's end, when it tries again.
  if place > 0 then line_join(line, value, place + held_back, queued, true, false, counter) end
  return fence_not_acquired(counter, math.max(redis.call('PTTL', key), held_back), held_back, epoch_recorded)
end
-- Strict FIFO: a free key goes to the head of the line, not to the caller,
-- unless the caller is the head.
local handed = false
if fifo and not held then
  held = redis.call('EXISTS', key) == 1
  local head = not held and redis.call('ZRANGE', line, 0, 0, 'WITHSCORES')
  if head and head[1] and head[1] ~= value then
    redis.call('ZREM', line, head[1])
    line_hand(key, counter, channel, line, head, ARGV[9])
    epoch_granted(KEYS[5], tonumber(ARGV[9]), cutoff)
    handed = true
  end
end
if not handed and not held and redis.call('SET', key, value, 'NX', 'PX', ttl) then
  if queued then redis.call('ZREM', line, value) end
  return taken()
end
if place > 0 then line_join(line, value, place, queued, refresh, false, counter) end
return fence_not_acquired(counter, redis.call('PTTL', key), 0, epoch_recorded)

-- Acquire a shared hold (protocol 7): one round trip, atomic on the server.
-- Any number of shared holders, or one exclusive holder (a lock: the
-- key's lua/acquire.lua), never both; writer-preferring: once an
-- exclusive waiter is in the key's line, a new shared request waits behind
-- it, with or without FIFO.
-- KEYS and ARGV as lua/acquire.lua's, and left out as its caller leaves
-- them out (protocol.AcquireSharedCall sends them as a FIFO acquire does:
-- the line and the hand-off window always). ARGV[8], FIFO, is not read: a
-- shared request always lets the line go first.
-- Returns {1, fence} when acquired: fence is the counter as the grant
-- found it, not incremented (the generation the holder reads; 0 without
-- fencing); {0, ms, counter, quarantine, history, recorded} when not, as
-- lua/acquire.lua's (ms: the key's PTTL, or the quarantine's); or an
-- error with nothing taken.
local key, counter, channel, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value, ttl = ARGV[1], tonumber(ARGV[2])
local place, queued, window = tonumber(ARGV[6]), ARGV[7] == '1', ARGV[9]
events_sharded = ARGV[10] == '1'
local cutoff = tonumber(ARGV[11] or '')
local refresh = ARGV[13] ~= '0'
line_tickets = ARGV[14] == '1'

-- wait queues the caller as a shared waiter (or keeps its place) and
-- replies "not acquired" with ms.
local function wait(ms, held_back)
  held_back = held_back or 0
  if place > 0 then line_join(line, value, place + held_back, queued, refresh or held_back > 0, true, counter) end
  return fence_not_acquired(counter, ms, held_back, epoch_recorded)
end

local kind = shared_first(key)
if kind == 'other' and not (queued and lock_value(key) == value) then
  -- An exclusive holder, or a hand-off to an exclusive waiter, or a key
  -- of a type no script writes.
  return wait(redis.call('PTTL', key))
end
if kind == 'set' then
  -- A semaphore's permits: this kind waits for them to go, as a lock does.
  return wait(redis.call('PTTL', key))
end

local held_back = epoch_check(KEYS[5], ttl, cutoff, ARGV[12] == '1', false)
local now = epoch_now()

-- taken runs once value holds K shared until now + ttl: the fence is the
-- counter as it is (a missing one starts as a grant's would), and K
-- expires with its last hold.
local function taken()
  local function undo() redis.call('ZREM', key, value) end
  epoch_granted(KEYS[5], ttl, cutoff)
  local fence = 0
  if ARGV[3] == '1' then
    fence = fence_seen(counter)
    if fence <= 0 then
      local err
      fence, err = next_fence(counter)
      if not fence then
        undo()
        return err
      end
    end
  end
  if kind == 'none' then
    redis.call('PEXPIRE', key, ttl + 1) -- the only hold
  else
    shared_expire(key, now)
  end
  if ARGV[5] == '1' then
    local sent = events_pcall(channel, 'acquired ' .. ARGV[4])
    if type(sent) == 'table' then
      undo()
      return sent
    end
  end
  return {1, fence}
end

if kind == 'other' then
  -- An older release handed this shared waiter the key as a lock (protocol
  -- 6 knows one kind of waiter): the hand-off becomes its shared hold.
  redis.call('DEL', key)
  redis.call('ZADD', key, now + ttl + 0.5, value)
  kind = 'none'
  return taken()
end
if queued and redis.call('ZSCORE', key, value) then
  -- A release handed this waiter its hold (and took it off the line): this
  -- is the confirming write of a waiter that did not count from the
  -- hand-off, and the hold counts from its sending.
  redis.call('ZADD', key, 'XX', now + ttl + 0.5, value)
  return taken()
end
if held_back > 0 then return wait(math.max(redis.call('PTTL', key), held_back), held_back) end

-- The line goes first. Shared waiters at its head (a writer ahead of them
-- gave up) are handed their holds, the caller with them when it is one.
-- An exclusive waiter at its head makes the caller wait behind it, and is
-- handed the key when the key is free.
local head = redis.call('ZRANGE', line, 0, 0, 'WITHSCORES')
if head[1] and shared_kind(head[2]) then
  redis.call('ZREM', line, head[1])
  shared_hand_out(key, counter, channel, line, window, head[1])
  kind = 'shared'
  if queued and redis.call('ZSCORE', key, value) then
    redis.call('ZADD', key, 'XX', now + ttl + 0.5, value)
    return taken()
  end
  head = redis.call('ZRANGE', line, 0, 0, 'WITHSCORES')
end
if head[1] then
  if redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', line, head[1])
    hand_over(key, counter, channel, line, head[1], window)
  end
  return wait(redis.call('PTTL', key))
end
redis.call('ZADD', key, now + ttl + 0.5, value)
if queued then redis.call('ZREM', line, value) end
return taken()

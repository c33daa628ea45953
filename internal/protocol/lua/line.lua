-- The waiting line of a lock (protocol 2; prepended to the acquire and
-- release scripts by internal/protocol/scripts.go).
--
-- LINE is a sorted set of waiters' lock values by arrival (the server's
-- clock in microseconds when the value first queued); DEADLINES is a
-- sorted set of the same values by the server time (ms) until which the
-- place is kept. A waiter keeps its place by trying again before its
-- deadline; a place past its deadline (a dead waiter) is dropped when it
-- reaches the head. Both keys expire with the latest deadline.

local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function line_leave(line, deadlines, value)
  redis.call('ZREM', line, value)
  redis.call('ZREM', deadlines, value)
end

-- line_head is the first waiter whose place is still kept, or nil.
local function line_head(line, deadlines)
  local now
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then return nil end
    now = now or server_ms()
    local deadline = tonumber(redis.call('ZSCORE', deadlines, first))
    if deadline and deadline > now then return first end
    line_leave(line, deadlines, first)
  end
end

-- line_join queues value, or keeps its place (and arrival) for keep ms more.
local function line_join(line, deadlines, value, keep)
  local t = redis.call('TIME')
  redis.call('ZADD', line, 'NX', t[1] .. string.rep('0', 6 - #t[2]) .. t[2], value)
  redis.call('ZADD', deadlines, server_ms() + keep, value)
  if redis.call('PTTL', line) < keep then
    redis.call('PEXPIRE', line, keep)
    redis.call('PEXPIRE', deadlines, keep)
  end
end

-- hand_over gives the free lock key to head, a waiter at the head of the
-- line, for window ms and tells it on the events channel by the SHA-1 of
-- its value (the value is the ownership proof and is never published). The
-- waiter's lease starts only when it confirms with an acquire of its own.
local function hand_over(key, channel, line, deadlines, head, window)
  redis.call('SET', key, head, 'PX', window)
  line_leave(line, deadlines, head)
  redis.call('PUBLISH', channel, 'granted ' .. redis.sha1hex(head))
end


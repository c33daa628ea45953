-- The waiting line of a lock or semaphore (protocols 2 and 7; prepended to the
-- acquire and release scripts by internal/protocol/scripts.go).
--
-- LINE is a sorted set of waiters' lock values by arrival: the server's
-- clock in microseconds when the value first queued, or under ticket order
-- (line_tickets) the key's counter as the value's first attempt drew it.
-- The line expires as a whole when no waiter has tried again for a place's length; a waiter
-- that died in it is handed the key (or a permit) once, for the hand-off
-- window only, and so costs the others that window once.

-- events_sharded is set by a script whose caller runs on Redis Cluster:
-- messages then go out on sharded pub/sub (SPUBLISH, Redis 7.0 and later),
-- which stays on the key's shard instead of reaching every node, or on
-- plain pub/sub where the server does not know SPUBLISH.
local events_sharded = false

-- events_pcall publishes msg on channel; like redis.pcall it returns an
-- error reply instead of raising it.
local function events_pcall(channel, msg)
  if events_sharded then
    local sent = redis.pcall('SPUBLISH', channel, msg)
    -- Redis says "Unknown Redis command called from script", Valkey
    -- "Unknown command called from script".
    local err = string.lower(type(sent) == 'table' and sent['err'] or '')
    if not (string.find(err, 'unknown', 1, true) and string.find(err, 'command', 1, true)) then
      return sent
    end
  end
  return redis.pcall('PUBLISH', channel, msg)
end

-- events_publish publishes msg on channel, raising an error as redis.call.
local function events_publish(channel, msg)
  local sent = events_pcall(channel, msg)
  if type(sent) == 'table' then error(sent) end
  return sent
end

-- line_tickets is set by a script whose caller orders the line by ticket
-- (protocol 7's switch: lock.WithTicketOrder, spec.lineOrder Ticket): a
-- new waiter's arrival is then the next value of the key's counter (the
-- fence counter, lua/fence.lua's next_fence), not the server's clock. The
-- counter is replicated with the line and only goes up within a history,
-- where a clock can step back; and the INCR that draws the ticket also
-- tells the attempt the counter it saw, where the clock's order needs TIME
-- and a GET. Fences then have gaps. Off (the clock) until every client of
-- the lock speaks protocol 7: a ticket is far below any clock arrival, so
-- waiters that queued by the clock would be overtaken by every ticket.
local line_tickets = false

-- line_arrival is a new waiter's score in a line whose counter is counter,
-- with kind after it ('', or a shared or multi-key waiter's fraction,
-- lua/shared.lua): a ticket under line_tickets (and fence_known is then
-- the ticket: any hand-off after it counts higher), else the server's
-- clock in µs, as before ticket order and when the counter is not an
-- integer.
local function line_arrival(counter, kind)
  if line_tickets and counter then
    local ticket = next_fence(counter)
    if ticket then
      fence_known = ticket
      return string.format('%.0f', ticket) .. kind
    end
  end
  local t = redis.call('TIME')
  return t[1] .. string.rep('0', 6 - #t[2]) .. t[2] .. kind
end

-- line_kept is value's place in line, looked up: nil when it has none.
-- Under ticket order it reads the counter into fence_known (the reply
-- reports it). A place a whole point or more above the counter (a ticket
-- is at most the counter plus its kind's fraction) was scored by the
-- clock before the lock switched, and would stay behind every ticket
-- drawn since: it is scored again with a ticket, at the back of today's
-- line, so a waiter that queued before the switch waits no longer than
-- one that queues now.
local function line_kept(line, value, counter, kind)
  local score = redis.call('ZSCORE', line, value)
  if not score or not (line_tickets and counter) then return score end
  fence_known = fence_seen(counter)
  if fence_known >= 0 and tonumber(score) >= fence_known + 1 then
    redis.call('ZADD', line, 'XX', line_arrival(counter, kind), value)
  end
  return score
end

-- line_join queues value, or keeps its place (and arrival). The line is
-- kept for keep ms more when value joins, and when refresh is set.
-- queued says value may be in the line already (the caller's flag): a
-- value that may not joins without a look; one that may is looked up, and
-- joins again, at the back, only when it is no longer there (its place
-- lapsed, or a failover lost it). So a waiter trying again costs one
-- ZSCORE, and a PEXPIRE only when it asks (protocol 7: a waiter refreshes
-- the line at least every half TTL, and the line is kept for two TTLs and
-- a hand-off window), where protocol 6 ran TIME, ZADD and PEXPIRE.
-- shared marks a shared waiter: its arrival is scored with a half more
-- (lua/shared.lua). counter is the key's counter, for ticket order.
local function line_join(line, value, keep, queued, refresh, shared, counter)
  local kind = shared and '.5' or ''
  if queued and line_kept(line, value, counter, kind) then
    if refresh then redis.call('PEXPIRE', line, keep) end
    return
  end
  redis.call('ZADD', line, 'NX', line_arrival(counter, kind), value)
  redis.call('PEXPIRE', line, keep)
end

-- line_identity is the holder identity in a lock value (everything before
-- its last '/'), nil for a value of another format.
local function line_identity(value)
  return string.match(value, '^(.+)/')
end

-- line_tell publishes msg on the waiter channel of identity (the events
-- channel followed by '@' and the identity), so that only the processes of
-- that identity wake. True when a subscriber received it; false when none
-- did (a waiter of protocol 2, which listens on the events channel only; a
-- process that died; no identity) or the caller may not publish there (an
-- ACL that names the events channel only).
local function line_tell(channel, identity, msg)
  if not identity then return false end
  local sent = events_pcall(channel .. '@' .. identity, msg)
  return type(sent) == 'number' and sent > 0
end

-- line_counted gives a hand-off the next value of the key's counter (the
-- fence counter, lua/fence.lua: protocol 4) and returns the tail of its
-- "granted" message, " <counter> <px> h<history>" (protocol 6: the
-- counter's history, lua/fence.lua's fence_history) and " <held>" when
-- held is given (a semaphore's live permits with this one). A waiter may
-- count its lease from an attempt that saw a lower counter in the same
-- history (it ran before this hand-off) plus px, the expiry this hand-off
-- set. '' when the counter cannot be incremented (not an integer): the
-- waiter then confirms first, as before protocol 4. The counter is its
-- fence too. A protocol-5 waiter reads the history where it expects held
-- and confirms first.
local function line_counted(counter, px, held)
  local g = next_fence(counter)
  if not g then return '', nil end
  local tail = string.format(' %.0f %d h%s', g, tonumber(px), fence_history())
  if held then tail = tail .. string.format(' %d', held) end
  return tail, g
end

-- line_grant tells head, a waiter just taken off the head of the line and
-- handed the key (or a permit), by the SHA-1 of its value (the value is
-- the ownership proof and is never published), naming the waiter now first
-- in line too ('-' for none), whose process looks again if the hand-off
-- goes unconfirmed, and then the hand-off's tail (line_counted).
-- The message goes to the two waiters' processes (line_tell); when either
-- had no subscriber there, it goes on the events channel instead, where
-- every waiting process hears it.
local function line_grant(channel, line, head, tail)
  local msg = 'granted ' .. redis.sha1hex(head)
  local next = redis.call('ZRANGE', line, 0, 0)[1]
  if next then
    msg = msg .. ' ' .. redis.sha1hex(next)
  elseif tail ~= '' then
    msg = msg .. ' -'
  end
  msg = msg .. tail
  local to = line_identity(head)
  local told = line_tell(channel, to, msg)
  if told and next then
    local after = line_identity(next)
    if after ~= to then told = line_tell(channel, after, msg) end
  end
  if not told then events_publish(channel, msg) end
end

-- hand_over gives the free lock key to head for window ms, counts the
-- hand-off with counter, and tells it.
local function hand_over(key, counter, channel, line, head, window)
  redis.call('SET', key, head, 'PX', window)
  line_grant(channel, line, head, line_counted(counter, window))
end

-- next_fence: the lock's next fencing token (shared by the scripts that
-- take a lock; prepended to them by internal/protocol/scripts.go).
--
-- INCR the counter. A missing counter (new lock, or the server lost its
-- data) answers 1: it then starts at the server's clock in microseconds,
-- above every token handed out before unless the clock went back. TIME's
-- two halves are strings: concatenating keeps the value exact (no float
-- formatting). Lua numbers are doubles, exact only below 2^53: a token
-- outside [1, 2^53 - 1] (a counter someone else wrote) is taken back with
-- DECR, leaving the counter as it was, and refused. A counter that is not
-- an integer fails INCR, which changes nothing.
-- Returns the token, or nil and an error reply. fence_checked is its part
-- after the INCR, given INCR's reply (lua/acquire_fast.lua runs the INCR
-- before this piece is defined).
local function fence_checked(counter, fence)
  if type(fence) == 'table' then return nil, fence end
  if fence == 1 then
    local t = redis.call('TIME')
    redis.call('SET', counter, t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
    fence = redis.call('INCR', counter)
  end
  if fence < 1 or fence > 9007199254740991 then
    redis.call('DECR', counter)
    return nil, redis.error_reply('ERR redlease: fence counter ' .. counter ..
      ' is not an integer below 2^53-1; fix or delete it (the controller raises it back to its floor)')
  end
  return fence
end

local function next_fence(counter)
  return fence_checked(counter, redis.pcall('INCR', counter))
end

-- fence_seen is the counter as a "not acquired" reply reports it (protocol
-- 4): every hand-off increments it (line.lua), so an attempt that saw a
-- value lower than a hand-off's ran before that hand-off — within one
-- history (fence_history). 0 when missing (a new counter starts above any
-- value read before, as a fence does); -1 when it is not an integer (no
-- hand-off can count from such an attempt).
local function fence_seen(counter)
  local v = redis.pcall('GET', counter)
  local n = type(v) == 'string' and tonumber(v)
  if v == false then return 0 end
  if not n or n ~= math.floor(n) then return -1 end
  return n
end

-- fence_history names the history the counter belongs to (protocol 6):
-- this server's replication ID. A master takes a new one at every start
-- and every promotion, and the counter can go back only across one of
-- those (a restart from an older RDB or an emptied disk, a replica promoted
-- without the last increments): two values of the counter compare only
-- within one history. A master also takes a new ID when it creates or
-- frees its replication backlog; a hand-off across that is confirmed
-- first, nothing worse. '' when the server reports none, or the caller's
-- ACL refuses INFO replication (tenants of the operator's stores may run
-- it): nothing counts then, and the waiter confirms first.
local function fence_history()
  local info = redis.pcall('INFO', 'replication')
  if type(info) ~= 'string' then return '' end
  return string.match(info, 'master_replid:(%x+)') or ''
end

-- fence_known is the counter as this script last read or drew it for the
-- waiting line (lua/line.lua's line_join under ticket order), nil when it
-- did neither: a "not acquired" reply then reports it without another GET.
local fence_known = nil

-- fence_not_acquired is a "not acquired" reply (protocol 6): {0, ms, the
-- counter as this attempt saw it, the ms left of a failover quarantine
-- (0: none), the counter's history, the longest TTL the key's epoch
-- record holds (lua/epoch.lua; 0 without the quarantine)}. ms is the
-- holder's PTTL for a lock, the time until a permit frees for a semaphore.
local function fence_not_acquired(counter, ms, held_back, recorded)
  return {0, ms, fence_known or fence_seen(counter), held_back or 0, fence_history(), recorded or 0}
end

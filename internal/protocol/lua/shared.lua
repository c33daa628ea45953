-- Shared holds (protocol 7; prepended, after line.lua and epoch.lua, to
-- the scripts that
-- hand a lock key over, the permit scripts and the shared scripts by
-- internal/protocol/scripts.go).
--
-- A key held shared is a sorted set, as a semaphore's (lua/permits.lua):
-- the values holding it, each scored by its expiry in the server's ms plus
-- half a millisecond. The half is the kind: a semaphore's scores are whole,
-- so a script tells the two apart by the first score it reads, with no key
-- or command more. A shared waiter's arrival in the lock's line is likewise
-- its µs plus a half, an exclusive waiter's whole: one line orders both
-- kinds, and the score a release pops says which kind it hands to. Both
-- are exact in a double (the ms until 2^52 ms, the µs until 2^51 µs, in
-- 2041; past it the line's half rounds to the even µs and a shared waiter
-- would read as exclusive: docs/protocol.md).

-- shared_kind reports a score that a shared hold or a shared waiter wrote
-- (a half).
local function shared_kind(score)
  return tonumber(score) % 1 == 0.5
end

-- all_kind reports a line score that a waiter for several keys at once
-- wrote (lua/acquire_all.lua: a quarter).
local function all_kind(score)
  return tonumber(score) % 1 == 0.25
end

-- all_marker is what a key reserved for head holds: no lock value (no
-- '/'), so nothing but head's acquisition of its whole set takes it.
local function all_marker(head)
  return '~' .. redis.sha1hex(head)
end

-- shared_first is K's kind from one command: 'none', 'shared' (a set
-- whose scores say so), 'set' (a semaphore's) or 'other' (a lock's
-- string, or a type no script writes), and K's first score. A ZRANGE
-- through pcall is the type check, as lock_value's GET is.
local function shared_first(key)
  local first = redis.pcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first['err'] then
    if string.find(first['err'], 'WRONGTYPE', 1, true) then return 'other' end
    error(first)
  end
  if not first[2] then return 'none' end
  return shared_kind(first[2]) and 'shared' or 'set'
end

-- shared_expire makes K expire with its last hold, rounded up to the
-- whole ms PEXPIRE takes.
local function shared_expire(key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if last then redis.call('PEXPIRE', key, math.ceil(tonumber(last) - now)) end
end

-- shared_hand_out gives head, a shared waiter just taken off the head of
-- LINE, and every shared waiter after it up to the first exclusive one, a
-- shared hold of K for window ms, each counted and told as a lock's
-- hand-off (line_counted, line_grant): all the readers that arrived
-- together behind a writer go in together. K is free or held shared.
local function shared_hand_out(key, counter, channel, line, window, head)
  local now = epoch_now()
  while head do
    redis.call('ZADD', key, now + tonumber(window) + 0.5, head)
    line_grant(channel, line, head, line_counted(counter, window))
    local nxt = redis.call('ZRANGE', line, 0, 0, 'WITHSCORES')
    head = nil
    if nxt[1] and shared_kind(nxt[2]) then
      redis.call('ZREM', line, nxt[1])
      head = nxt[1]
    end
  end
  shared_expire(key, now)
end

-- line_hand gives the free lock key K to the waiter popped off its line
-- ({value, score}, ZPOPMIN's reply; K may still hold the releaser's
-- value): an exclusive waiter gets the key (hand_over), a shared one and
-- those after it shared holds.
local function line_hand(key, counter, channel, line, popped, window)
  if all_kind(popped[2]) then
    -- A waiter for several keys: the key is reserved for it (held by its
    -- marker for the window) and it is told, uncounted: it takes its whole
    -- set at its next attempt, or refreshes the reservation while another
    -- key of its set is held (lua/acquire_all.lua).
    redis.call('SET', key, all_marker(popped[1]), 'PX', window)
    line_grant(channel, line, popped[1], '')
  elseif shared_kind(popped[2]) then
    redis.call('DEL', key)
    shared_hand_out(key, counter, channel, line, window, popped[1])
  else
    hand_over(key, counter, channel, line, popped[1], window)
  end
end

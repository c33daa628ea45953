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
-- Returns the token, or nil and an error reply.
local function next_fence(counter)
  local fence = redis.pcall('INCR', counter)
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

-- fence_not_acquired is a "not acquired" reply (protocol 6): {0, ms, the
-- counter as this attempt saw it, the ms left of a failover quarantine
-- (0: none), the counter's history, the longest TTL the key's epoch
-- record holds (lua/epoch.lua; 0 without the quarantine)}. ms is the
-- holder's PTTL for a lock, the time until a permit frees for a semaphore.
local function fence_not_acquired(counter, ms, held_back, recorded)
  return {0, ms, fence_seen(counter), held_back or 0, fence_history(), recorded or 0}
end
-- The waiting line of a lock or semaphore (protocol 2; prepended to the
-- acquire and release scripts by internal/protocol/scripts.go).
--
-- LINE is a sorted set of waiters' lock values by arrival (the server's
-- clock in microseconds when the value first queued). The line expires
-- as a whole when no waiter has tried again for a place's length; a waiter
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

-- line_join queues value, or keeps its place (and arrival), and keeps the
-- line for keep ms more.
local function line_join(line, value, keep)
  local t = redis.call('TIME')
  redis.call('ZADD', line, 'NX', t[1] .. string.rep('0', 6 - #t[2]) .. t[2], value)
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
-- The holders of a semaphore (protocol 3; prepended, after line.lua, to the
-- permit scripts by internal/protocol/scripts.go).
--
-- The semaphore key K is a sorted set of the values holding a permit,
-- scored by when each permit expires (the server's clock in milliseconds);
-- HOLDERS ({K}:holders) maps each confirmed holder's value to
-- "<fence> <since>" (its token, and the server's clock in ms when it took
-- the permit). A permit handed to a waiter and not yet confirmed is in K
-- only. An entry whose expiry has passed is no permit: every script that
-- counts or hands out permits removes those first (permits_purge), and K
-- and HOLDERS expire as a whole with their last permit (permits_expire).
-- The caller says how many permits the semaphore has: a script admits a
-- holder only while fewer than that many live entries are in K, and never
-- removes a live one, so lowering the count revokes nothing.

-- permits_now is the server's clock in milliseconds (exact in a Lua
-- double: about 1.8e12 today).
local function permits_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- permits_is_lock reports a K that a lock holds (or was handed to a lock
-- waiter): a string, not a holder set. It is neither taken nor changed.
local function permits_is_lock(key)
  return redis.call('TYPE', key)['ok'] == 'string'
end

-- permits_purge removes the entries that expired by now.
local function permits_purge(key, holders, now)
  local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    for _, v in ipairs(gone) do redis.call('HDEL', holders, v) end
  end
end

-- permits_expire makes K and HOLDERS expire with K's last entry.
local function permits_expire(key, holders, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if last then
    local ms = tonumber(last) - now
    redis.call('PEXPIRE', key, ms)
    redis.call('PEXPIRE', holders, ms)
  end
end

-- permits_hand_over gives head, a waiter just taken off the line, a permit
-- for window ms, counts the hand-off (its fence, recorded in HOLDERS), and
-- tells it (line_grant) with the number of live permits.
local function permits_hand_over(key, counter, holders, channel, line, head, now, window)
  redis.call('ZADD', key, now + window, head)
  local tail, fence = line_counted(counter, window, redis.call('ZCARD', key))
  if fence then redis.call('HSET', holders, head, string.format('%.0f %.0f', fence, now)) end
  line_grant(channel, line, head, tail)
end

-- The failover quarantine (protocol 5; prepended to the lock's acquire,
-- release and renew scripts by internal/protocol/scripts.go).
--
-- A key's epoch record (RECORD, a hash beside the key) names the server
-- that last granted or renewed it: its run ID ('run', new at every start)
-- and replication ID ('repl', new at every promotion), and the longest
-- TTL granted or renewed on the key ('ttl', ms). When a script finds
-- itself on another server than the record names — a promoted replica, a
-- restart that may have lost writes — leases the record's server granted
-- may live on in their holders while their keys are gone here: it records
-- the new epoch and a quarantine ('until', this server's clock in ms),
-- during which nothing is granted. docs/protocol.md ("Failover
-- quarantine") argues its length: the longest TTL, plus how long a cut-off
-- master may still have accepted writes (the caller's CUTOFF: its
-- min-replicas-max-lag and check period, or its cluster-node-timeout),
-- plus 2 % of both for the two clocks' drift.
--
-- A master also takes a new replication ID, without a failover, when it
-- creates its replication backlog (its first replica attaches) or frees it
-- (no replica for repl-backlog-ttl). Both clear master_replid2, which a
-- promotion sets to the ID it replaced: a new replication ID with the same
-- run ID and no replid2 is that false alarm, recorded without quarantine.

-- A literal: the library defines this at load, where Redis 7.0 gives
-- no access to the string library.
local epoch_no_replid2 = '0000000000000000000000000000000000000000'

-- epoch_now is the server's clock in ms.
local function epoch_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- epoch_server is this server's run ID, replication ID and replid2.
local function epoch_server()
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local repl = redis.call('INFO', 'replication')
  return run, string.match(repl, 'master_replid:(%x+)'), string.match(repl, 'master_replid2:(%x+)')
end

-- epoch_recorded is the longest TTL the record holds once epoch_check ran
-- (nil without the quarantine): epoch_granted compares with it.
local epoch_recorded = nil

-- epoch_check runs before a script grants or renews under the quarantine
-- (cutoff, ms, a number: off when nil). ttl (ms) is what this call would
-- grant or renew; grants says the call is a grant or a renewal already
-- (a renewal, a release, the controller's declaration), whose TTL the
-- record takes at once. An acquisition attempt passes grants false and
-- calls epoch_granted only when it grants (protocol 6): a waiter that
-- never holds must not lengthen every later quarantine. missing_waits
-- says a missing record is a loss (its key was declared, or its holders
-- opted in) rather than a new key; a missing record is sized by ttl, the
-- one TTL known then. It records the epoch and returns the ms left of the
-- quarantine (0: none).
local function epoch_check(record, ttl, cutoff, missing_waits, grants)
  if not cutoff then return 0 end
  local rec = redis.call('HMGET', record, 'run', 'repl', 'ttl', 'until')
  local run, repl, repl2 = epoch_server()
  local recorded = tonumber(rec[3])
  local longest = recorded or ttl
  if grants then longest = math.max(longest, ttl) end
  local untill = tonumber(rec[4])
  local lost = (rec[1] == false and missing_waits) or
    (rec[1] ~= false and (rec[1] ~= run or (rec[2] ~= repl and repl2 ~= epoch_no_replid2)))
  if lost then
    local q = longest + cutoff
    untill = math.max(untill or 0, epoch_now() + q + math.ceil(q / 50))
    redis.call('HSET', record, 'run', run, 'repl', repl, 'ttl', longest, 'until', untill)
  elseif rec[1] ~= run or rec[2] ~= repl or longest ~= recorded then
    redis.call('HSET', record, 'run', run, 'repl', repl, 'ttl', longest)
  end
  epoch_recorded = longest
  if not untill then return 0 end
  local left = untill - epoch_now()
  if left > 0 then return left end
  redis.call('HDEL', record, 'until')
  return 0
end

-- epoch_granted records ttl (ms) as granted on the record's key, after
-- epoch_check ran with the same cutoff (nothing without the quarantine).
local function epoch_granted(record, ttl, cutoff)
  if not cutoff or ttl <= (epoch_recorded or 0) then return end
  redis.call('HSET', record, 'ttl', ttl)
  epoch_recorded = ttl
end
-- Release a permit (protocol 3): remove it only if the value holds it, and
-- hand the permits now free to the first waiters in line; a waiter giving
-- up leaves the line.
-- KEYS[1] semaphore key, KEYS[2] events channel, KEYS[3] the semaphore's
-- waiting line, KEYS[4] holders, KEYS[5] fence counter (protocol 4: each
-- hand-off is counted, lua/line.lua's line_counted), KEYS[6] epoch record
-- (lua/epoch.lua)
-- ARGV[1] value, ARGV[2] hand-off window (ms), ARGV[3] "1" to announce
-- "released" when nobody waits, ARGV[4] the number of permits, ARGV[5] "1"
-- on Redis Cluster (messages on sharded pub/sub), ARGV[6] the semaphore's
-- TTL (ms), ARGV[7] and ARGV[8] the failover quarantine's (protocol 5): a
-- release that would hand a permit over checks the epoch first, and during
-- a quarantine hands none, and its waiters keep their places
-- Returns 1 when released, 0 when the value held no permit.
local key, channel, line, holders, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local value, window, permits = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
events_sharded = ARGV[5] == '1'
if permits_is_lock(key) then
  redis.call('ZREM', line, value)
  return 0
end
local now = permits_now()
permits_purge(key, holders, now)
if not redis.call('ZSCORE', key, value) then
  redis.call('ZREM', line, value)
  return 0
end
redis.call('ZREM', key, value)
redis.call('HDEL', holders, value)
local count, handed = redis.call('ZCARD', key), false
local checked = false
while count < permits do
  local popped = redis.call('ZPOPMIN', line)
  local head = popped[1]
  if not head then break end
  if not checked and epoch_check(KEYS[6], tonumber(ARGV[6] or '0'), tonumber(ARGV[7] or ''), ARGV[8] == '1', true) > 0 then
    redis.call('ZADD', line, popped[2], head)
    break
  end
  checked = true
  permits_hand_over(key, counter, holders, channel, line, head, now, window)
  count, handed = count + 1, true
end
if not handed and ARGV[3] == '1' then events_publish(channel, 'released') end
permits_expire(key, holders, now)
return 1

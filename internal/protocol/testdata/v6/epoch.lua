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

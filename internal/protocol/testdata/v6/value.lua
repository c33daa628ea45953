-- lock_value reads a lock key (prepended to the lock's acquire, release
-- and renew scripts by internal/protocol/scripts.go).
--
-- A key is a lock (a string) or a semaphore (a sorted set, see
-- lua/permits.lua), and a lock's caller may meet the other kind on its key:
-- a DistributedLock whose permits changed while held, two programs
-- configured differently. GET fails on a sorted set with WRONGTYPE, which
-- would fail the whole script: a waiter would stop waiting, a waiter
-- giving up would keep its place, a renewal would report an error instead
-- of a lost lease.

-- lock_value is K's value, or false when K is missing or holds the other
-- kind (no lock value can match it). GET through pcall is the type check:
-- one command, where TYPE then GET would be two on every call.
local function lock_value(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then
    if string.find(v['err'] or '', 'WRONGTYPE', 1, true) then return false end
    error(v)
  end
  return v
end

-- Release (protocols 2, 4 and 7): delete only if the value is ours, and
-- hand the key to the first waiter in line (a shared waiter and those after
-- it: shared holds, protocol 7), counting the hand-off with the fence
-- counter; a waiter giving up leaves the line.
-- KEYS[1] lock key, KEYS[2] events channel, KEYS[3] waiting line, KEYS[4]
-- fence counter, KEYS[5] epoch record (lua/epoch.lua)
-- ARGV[1] value, ARGV[2] hand-off window (ms), ARGV[3] "1" to announce
-- "released" when nobody waits, ARGV[4] "1" on Redis Cluster (messages on
-- sharded pub/sub), ARGV[5] the lock's TTL (ms), ARGV[6] the failover
-- quarantine's cutoff (ms; '' for no quarantine), ARGV[7] "1" when a
-- missing epoch record is a loss (protocol 5): a release that would hand
-- the key over checks the epoch first, and during a quarantine the key is
-- deleted, handed to nobody, and the waiter keeps its place.
-- A caller leaves out KEYS[5] and ARGV[5..7] without a quarantine, and the
-- flags ARGV[3] and [4] when they are off and last (protocol.Release): so
-- this script reads the epoch record and the TTL only under a quarantine,
-- and a missing flag as off.
-- Returns 1 when released, 0 when the key was not ours (a semaphore's
-- included).
local key, channel, line, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
events_sharded = ARGV[4] == '1'
if not fast_popped and lock_value(key) ~= ARGV[1] then
  redis.call('ZREM', line, ARGV[1])
  return 0
end
local popped = fast_popped or redis.call('ZPOPMIN', line)
local head = popped[1]
if head and epoch_check(KEYS[5], tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or ''), ARGV[7] == '1', true) > 0 then
  redis.call('ZADD', line, popped[2], head)
  head = nil
end
if head then
  line_hand(key, counter, channel, line, popped, ARGV[2])
else
  redis.call('DEL', key)
  if ARGV[3] == '1' then events_publish(channel, 'released') end
end
return 1

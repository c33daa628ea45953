-- Release the keys an all-or-nothing acquisition took (protocol 7), or
-- those reserved for a waiter for several keys that gives up, all in one
-- atomic run: no client sees some of them given back and not the
-- others. Each key still holding the value is handed to the first waiter
-- in its line, or deleted, as lua/release.lua does for one key; a key no
-- longer the caller's is left as it is, and the value leaves its line.
-- KEYS: four per lock key, in the acquisition's order: the key, its events
-- channel, its waiting line, its fence counter (which counts a hand-off).
-- ARGV[1] value, ARGV[2] hand-off window (ms), ARGV[3] "1" to announce
-- "released" when nobody waits, ARGV[4] "1" on Redis Cluster (messages on
-- sharded pub/sub), ARGV[5] the lock's TTL (ms), ARGV[6] the failover
-- quarantine's cutoff (ms; missing: no quarantine), ARGV[7] "1" when a
-- missing epoch record is a loss. Under a quarantine KEYS are five per
-- lock key, the fifth its epoch record: a key whose server changed is
-- deleted, handed to nobody, and its waiter keeps its place, as
-- lua/release.lua does for one key.
-- Returns one integer per key: 1 when it was released, 0 when it was no
-- longer the caller's.
local cutoff = tonumber(ARGV[6] or '')
local per = cutoff and 5 or 4
local n = #KEYS / per
events_sharded = ARGV[4] == '1'
local released = {}
for i = 1, n do
  local at = per * (i - 1)
  local key, channel, line, counter = KEYS[at + 1], KEYS[at + 2], KEYS[at + 3], KEYS[at + 4]
  local v = lock_value(key)
  if v == ARGV[1] or v == all_marker(ARGV[1]) then
    -- The caller's key, or one reserved for it while it waited (a waiter
    -- giving up frees its reservations as a holder frees its keys).
    released[i] = v == ARGV[1] and 1 or 0
    local popped = redis.call('ZPOPMIN', line)
    if popped[1] and cutoff and epoch_check(KEYS[at + 5], tonumber(ARGV[5]), cutoff, ARGV[7] == '1', true) > 0 then
      redis.call('ZADD', line, popped[2], popped[1])
      popped = {}
    end
    if popped[1] then
      line_hand(key, counter, channel, line, popped, ARGV[2])
    else
      redis.call('DEL', key)
      if ARGV[3] == '1' then events_publish(channel, 'released') end
    end
  else
    released[i] = 0
    redis.call('ZREM', line, ARGV[1])
  end
end
return released

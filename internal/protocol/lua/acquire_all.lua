-- Acquire several lock keys at once, all or none (protocol 7): one round
-- trip, atomic on the server, so no client ever sees some of the keys
-- taken and not the others, and two callers taking the same keys in
-- different orders cannot deadlock (neither holds any while it waits).
-- KEYS: four per lock key, in the caller's order: the key, its fence
-- counter, its waiting line, its events channel.
-- ARGV[1] value (one for every key), ARGV[2] ttl (ms), ARGV[3] "1" to
-- increment the fences, ARGV[4] identity, ARGV[5] "1" to announce
-- "acquired <identity>" on each key, ARGV[6] "1" for strict FIFO (a key
-- with waiters in line is not free: it goes to the head of its line),
-- ARGV[7] "1" on Redis Cluster (messages on sharded pub/sub).
-- Returns {1, fence_1, ..., fence_n} when every key was taken (fences 0
-- without fencing), {0, i, pttl} when the i-th key was not free (pttl: its
-- PTTL, -1 when it has no TTL, -2 when it is free but its FIFO line is
-- not empty), or an error with no key taken.
-- A key held as a semaphore (a sorted set) is held: EXISTS sees it, and
-- no command here minds its type.
local n = #KEYS / 4
events_sharded = ARGV[7] == '1'
for i = 1, n do
  local key = KEYS[4 * i - 3]
  if redis.call('EXISTS', key) == 1 then return {0, i, redis.call('PTTL', key)} end
  if ARGV[6] == '1' and redis.call('EXISTS', KEYS[4 * i - 1]) == 1 then return {0, i, -2} end
end

-- undo gives every key back before an error is returned: Redis does not
-- roll back a script's writes, and no key may stay held by nobody.
local function undo()
  for i = 1, n do redis.call('DEL', KEYS[4 * i - 3]) end
end

for i = 1, n do
  redis.call('SET', KEYS[4 * i - 3], ARGV[1], 'PX', ARGV[2])
end
local reply = {1}
for i = 1, n do
  local taken = lease_taken(ARGV, KEYS[4 * i - 2], KEYS[4 * i], undo)
  if taken['err'] then return taken end
  reply[i + 1] = taken[2]
end
return reply

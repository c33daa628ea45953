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
-- ARGV[7] "1" on Redis Cluster (messages on sharded pub/sub), ARGV[8]
-- place (ms; missing or 0: do not wait), ARGV[9] "1" when the value may
-- be in the lines already, ARGV[10] hand-off window (ms), ARGV[11] the
-- failover quarantine's cutoff (ms; missing: no quarantine), ARGV[12] "1"
-- when a missing epoch record is a loss (lua/epoch.lua), ARGV[13] "1" to
-- order the lines by ticket (lua/line.lua's line_tickets: each key's
-- arrival is then a ticket from its own counter; one script draws them
-- all, so every line still orders two callers alike). Under a
-- quarantine KEYS are five per lock key, the fifth its epoch record: a key
-- whose server changed holds the whole set back (nothing is granted or
-- reserved) until the quarantine ends, and a grant records the TTL on
-- every key's record, as lua/acquire.lua does for one key.
-- A waiting caller (ARGV[8]) joins every key's line with one arrival,
-- scored in µs plus a quarter (lua/shared.lua's all_kind), so every line
-- orders the waiters for several keys alike. A release that pops it
-- reserves the key for it (the key holds its marker for the window,
-- lua/shared.lua's line_hand), and so does its own attempt for a free key
-- whose line it heads; it refreshes its reservations at every attempt and
-- takes its set once every key is free or reserved for it. So nobody who
-- arrived after it takes a key of its set before it, and it waits for no
-- more than the holders and the waiters ahead of it.
-- Returns {1, fence_1, ..., fence_n} when every key was taken (fences 0
-- without fencing), {0, i, pttl} when the i-th key was not free (pttl: its
-- PTTL, -1 when it has no TTL, -2 when it is free but its FIFO line is
-- not empty; the ms its quarantine has left when that is longer), or an
-- error with no key taken.
-- A key held as a semaphore or shared (a sorted set) is held: EXISTS sees
-- it, and no command here minds its type.
local value = ARGV[1]
local place, queued, window = tonumber(ARGV[8] or '0'), ARGV[9] == '1', ARGV[10]
events_sharded = ARGV[7] == '1'
line_tickets = ARGV[13] == '1'
local cutoff = tonumber(ARGV[11] or '')
local per = cutoff and 5 or 4
local n = #KEYS / per
local mine = all_marker(value)

-- of is the j-th of key i's KEYS: 1 the key, 2 its fence counter, 3 its
-- line, 4 its events channel, 5 its epoch record.
local function of(i, j) return KEYS[per * (i - 1) + j] end

-- The quarantine: held_back is the longest any key's holds the set back;
-- recorded, per key, the TTL its record holds (epoch_check's
-- epoch_recorded, which epoch_granted reads).
local held_back, held_back_at, recorded = 0, nil, {}
if cutoff then
  for i = 1, n do
    local ms = epoch_check(of(i, 5), tonumber(ARGV[2]), cutoff, ARGV[12] == '1', false)
    recorded[i] = epoch_recorded
    if ms > held_back then held_back, held_back_at = ms, i end
  end
end

-- held is why key i is not free for the caller: nil when free (missing,
-- or reserved for it), else the reply's pttl. A key that holds the
-- caller's own value was handed to it by a protocol-6 release (which
-- knows no markers): the caller's values are never retried after an
-- attempt that may have written them, so it is its reservation too.
local function held(i)
  local key, line = of(i, 1), of(i, 3)
  local v = lock_value(key)
  if v == mine or v == value then return nil end
  if v ~= false or redis.call('EXISTS', key) == 1 then return redis.call('PTTL', key) end
  if ARGV[6] == '1' then
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if head and head ~= value then return -2 end
  end
  return nil
end

local blocked, wait = nil, 0
for i = 1, n do
  local ms = held(i)
  if ms then
    blocked, wait = i, ms
    break
  end
end
if held_back > 0 and not (blocked and wait > held_back) then
  blocked, wait = held_back_at, held_back
end

if not blocked then
  -- undo gives every key back before an error is returned: Redis does
  -- not roll back a script's writes, and no key may stay held by nobody.
  local function undo()
    for i = 1, n do redis.call('DEL', of(i, 1)) end
  end
  for i = 1, n do
    redis.call('SET', of(i, 1), value, 'PX', ARGV[2])
    if queued then redis.call('ZREM', of(i, 3), value) end
    if cutoff then
      epoch_recorded = recorded[i]
      epoch_granted(of(i, 5), tonumber(ARGV[2]), cutoff)
    end
  end
  local reply = {1}
  for i = 1, n do
    local taken = lease_taken(ARGV, of(i, 2), of(i, 4), undo)
    if taken['err'] then return taken end
    reply[i + 1] = taken[2]
  end
  return reply
end

if place > 0 then
  local arrival = nil
  for i = 1, n do
    local key, line = of(i, 1), of(i, 3)
    if lock_value(key) == mine then
      redis.call('PEXPIRE', key, window) -- a reservation kept while the caller waits
    else
      if not (queued and line_kept(line, value, of(i, 2), '.25')) then
        if not arrival or line_tickets then arrival = line_arrival(of(i, 2), '.25') end
        redis.call('ZADD', line, 'NX', arrival, value)
      end
      redis.call('PEXPIRE', line, place)
      if held_back == 0 and redis.call('EXISTS', key) == 0 and redis.call('ZRANGE', line, 0, 0)[1] == value then
        -- Free, and the caller first in its line: reserved for it.
        redis.call('ZREM', line, value)
        redis.call('SET', key, mine, 'PX', window)
      end
    end
  end
end
return {0, blocked, wait}

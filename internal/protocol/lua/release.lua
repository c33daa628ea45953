-- Release (protocol 2): delete only if the value is ours, and hand the key
-- to the first waiter in line; a waiter giving up leaves the line.
-- KEYS[1] lock key, KEYS[2] events channel, KEYS[3] waiting line,
-- KEYS[4] line deadlines; ARGV[1] value, ARGV[2] hand-off window (ms)
-- Returns 1 when released, 0 when the key was not ours.
local key, channel, line, deadlines = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('GET', key) ~= ARGV[1] then
  line_leave(line, deadlines, ARGV[1])
  return 0
end
local head = line_head(line, deadlines)
if head then
  hand_over(key, channel, line, deadlines, head, ARGV[2])
else
  redis.call('DEL', key)
  -- For protocol-1 waiters and pkg/election's observers.
  redis.call('PUBLISH', channel, 'released')
end
return 1

-- Release: delete only if the value is ours, then wake the waiters.
-- KEYS[1] lock key, KEYS[2] events channel; ARGV[1] value
-- Returns 1 when released, 0 when the key was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[2], 'released')
  return 1
end
return 0

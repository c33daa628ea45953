-- Renew: compare-and-PEXPIRE. Never re-creates a key that expired.
-- KEYS[1] lock key; ARGV[1] value, ARGV[2] ttl (ms)
-- Returns 1 when extended, 0 when the key was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0

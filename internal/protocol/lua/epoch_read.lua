-- Epoch read (protocol 5): write a key's epoch record ahead of first use
-- when it has none, and report the failover quarantine left.
-- KEYS[1] epoch record; ARGV[1] the lock's TTL (ms), ARGV[2] the
-- quarantine's cutoff (ms), ARGV[3] "1" when a missing record is a loss
-- Returns {1 when the record was written now else 0, ms of quarantine
-- left}.
local created = redis.call('EXISTS', KEYS[1]) == 0
local left = epoch_check(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1', true)
return {created and 1 or 0, left}

-- Renew: compare-and-PEXPIRE. Never re-creates a key that expired.
-- KEYS[1] lock key, KEYS[2] epoch record (lua/epoch.lua); ARGV[1] value,
-- ARGV[2] ttl (ms), ARGV[3] the failover quarantine's cutoff (ms; '' for
-- no quarantine), ARGV[4] "1" when a missing epoch record is a loss
-- (protocol 5). A renewal notices a new epoch like an acquisition and
-- starts the quarantine, but renews: a key that survived on this server
-- is its holder's. Without a quarantine a caller leaves out KEYS[2] and
-- ARGV[3..4] (protocol.RenewCall).
-- Returns 1 when extended, 0 when the key was no longer ours (a
-- semaphore's included).
if lock_value(KEYS[1]) == ARGV[1] then
  epoch_check(KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[3] or ''), ARGV[4] == '1', true)
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0

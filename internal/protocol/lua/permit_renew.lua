-- Renew a permit (protocol 3): extend it only while the value holds it
-- live; never revives an expired one.
-- KEYS[1] semaphore key, KEYS[2] holders, KEYS[3] epoch record
-- (lua/epoch.lua); ARGV[1] value, ARGV[2] ttl (ms), ARGV[3] and ARGV[4]
-- the failover quarantine's (protocol 5): as lua/renew.lua, a renewal
-- notices a new server and starts the quarantine, but renews. Without a
-- quarantine a caller leaves out KEYS[3] and ARGV[3..4]
-- (protocol.RenewPermitCall).
-- Returns 1 when extended, 0 when the value no longer held a permit.
local key, holders = KEYS[1], KEYS[2]
if permits_other_kind(key) then return 0 end
local now = permits_now()
local expiry = redis.call('ZSCORE', key, ARGV[1])
if not expiry or tonumber(expiry) <= now then return 0 end
epoch_check(KEYS[3], tonumber(ARGV[2]), tonumber(ARGV[3] or ''), ARGV[4] == '1', true)
redis.call('ZADD', key, 'XX', now + tonumber(ARGV[2]), ARGV[1])
permits_expire(key, holders, now)
return 1

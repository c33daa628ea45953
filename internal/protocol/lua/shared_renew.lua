-- Renew a shared hold (protocol 7): extend it only while the value holds it
-- live; never revives an expired one.
-- KEYS and ARGV as lua/renew.lua's ([1] lock key, [2] epoch record; [1]
-- value, [2] ttl (ms), [3] and [4] the failover quarantine's; without a
-- quarantine a caller leaves out KEYS[2] and ARGV[3..4]).
-- Returns 1 when extended, 0 when the value no longer held the key shared.
local key = KEYS[1]
if redis.call('TYPE', key)['ok'] ~= 'zset' then return 0 end
local now = epoch_now()
local expiry = redis.call('ZSCORE', key, ARGV[1])
if not expiry or not shared_kind(expiry) or tonumber(expiry) <= now then return 0 end
epoch_check(KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[3] or ''), ARGV[4] == '1', true)
redis.call('ZADD', key, 'XX', now + tonumber(ARGV[2]) + 0.5, ARGV[1])
shared_expire(key, now)
return 1

-- Revoke (break-glass): the named holder of a lock key loses it, and nobody
-- is granted the key before its current PX has run out. The value is
-- replaced by a tombstone no client owns (lockctl release, the
-- controller's LockRelease), keeping the PTTL: the holder's next renewal
-- and its release find another value (renew replies 0: its lease is lost;
-- release is a no-op), an acquisition finds the key taken until it
-- expires, and the line continues then as after any expiry. The tombstone
-- is a value of the lock value format whose identity starts with
-- "revoked-by-", so readers name it.
-- KEYS[1] lock key, KEYS[2] fence counter
-- ARGV[1] the tombstone, ARGV[2] the holder's identity ('' for whoever
-- holds it), ARGV[3] the fence counter as the requester saw it ('' for
-- any): the holder changed since the requester looked when either differs.
-- Returns {1, identity, counter, pttl} when revoked, {0, reason, identity,
-- counter, pttl} when nothing changed; reason: free, semaphore, revoked
-- (already a tombstone), nottl (a key with no expiry: only force frees
-- it), holder (another identity), fence (another counter). counter is ''
-- when there is none.
local key, counter = KEYS[1], KEYS[2]
local fence = redis.call('GET', counter) or ''
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then return {0, 'free', '', fence, -2} end
if kind ~= 'string' then return {0, 'semaphore', '', fence, -2} end
local v = redis.call('GET', key)
local identity = string.match(v, '^(.+)/' .. string.rep('%x', 40) .. '$') or ''
local pttl = redis.call('PTTL', key)
if string.sub(identity, 1, 11) == 'revoked-by-' then return {0, 'revoked', identity, fence, pttl} end
if pttl < 0 then return {0, 'nottl', identity, fence, pttl} end
if ARGV[2] ~= '' and ARGV[2] ~= identity then return {0, 'holder', identity, fence, pttl} end
if ARGV[3] ~= '' and ARGV[3] ~= fence then return {0, 'fence', identity, fence, pttl} end
redis.call('SET', key, ARGV[1], 'KEEPTTL', 'XX')
return {1, identity, fence, pttl}

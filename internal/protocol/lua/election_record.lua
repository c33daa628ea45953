-- Compare-and-set of a leader election record (ResourceLock.Update).
-- KEYS[1] record key; ARGV[1] the record last read or written by the caller,
-- ARGV[2] the new record, ARGV[3] the key's TTL (ms).
-- Returns 1 when written, 0 when the key is gone, -1 when the stored record
-- is not ARGV[1] (someone else wrote since: a conflict).
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
if cur ~= ARGV[1] then
  return -1
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1

-- The uncontended release of lua/release.lua (protocol 7), run before the
-- pieces it would define (see lua/acquire_fast.lua): when nobody waits in
-- the line and no "released" message is asked for, the owner's key is
-- deleted here, exactly as lua/release.lua would. Anything else (a line,
-- a value that is not the key's, another kind of key) goes on to it.
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[3]) == 0 and redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end

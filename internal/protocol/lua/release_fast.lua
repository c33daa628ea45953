-- The uncontended release of lua/release.lua (protocol 7), run before the
-- pieces it would define (see lua/acquire_fast.lua): when no "released"
-- message is asked for, the owner's release pops the line here, and when
-- nobody waited it deletes the key and returns, exactly as lua/release.lua
-- would. Otherwise fast_popped is what it popped (a waiter to hand the key
-- to), which lua/release.lua uses instead of reading the key and popping
-- the line again; nil when this path did not run or the value is not the
-- key's (lua/release.lua then reads the key itself).
local fast_popped = nil
if ARGV[3] ~= '1' and redis.pcall('GET', KEYS[1]) == ARGV[1] then
  fast_popped = redis.call('ZPOPMIN', KEYS[3])
  if not fast_popped[1] then
    redis.call('DEL', KEYS[1])
    return 1
  end
end

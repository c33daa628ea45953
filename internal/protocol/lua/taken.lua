-- lease_taken finishes an acquisition once the key (or a permit) is the
-- caller's (shared by the acquire scripts, prepended to them by
-- internal/protocol/scripts.go). argv is the script's ARGV, passed on
-- because a piece the library defines at load sees no ARGV of its own:
-- argv[3] is "1" to increment the fence, argv[4] the identity, argv[5] "1"
-- to announce "acquired <identity>". It takes the next fence from counter,
-- lets record (may be nil) note it, and announces. On an error, undo gives
-- the key or permit back before the error is returned: Redis does not roll
-- back a script's writes, and a failed attempt must never leave a key or
-- permit held by nobody.
-- Returns {1, fence} (fence 0 without fencing), or an error reply.
local function lease_taken(argv, counter, channel, undo, record)
  local fence = 0
  if argv[3] == '1' then
    local err
    fence, err = next_fence(counter)
    if not fence then
      undo()
      return err
    end
  end
  if record then record(fence) end
  if argv[5] == '1' then
    local sent = events_pcall(channel, 'acquired ' .. argv[4])
    if type(sent) == 'table' then
      undo()
      return sent
    end
  end
  return {1, fence}
end

-- Argo CD health of a redlease.io LockStore: argocd-cm key
-- resource.customizations.health.redlease.io_LockStore.
-- docs/argocd.md explains the mapping; test/docs/argocd_test.go runs this
-- file on the fixtures in docs/argocd/testdata/LockStore/.
--
-- Argo CD runs argocd-cm scripts without Lua's string library, so this
-- one uses only `..` and comparisons.
local hs = {status = "Progressing", message = "Waiting for the redlease controller to observe the store"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end

local function condition(type)
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

-- A status written for an older spec says nothing about this one: wait
-- for the controller rather than judge the new spec by the old status.
local ready = condition("Ready")
local generation = obj.metadata.generation
if generation ~= nil and ((obj.status.observedGeneration or 0) < generation or
    (ready ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation)) then
  hs.message = "Waiting for the redlease controller to observe generation " .. generation
  return hs
end
if ready == nil then
  return hs
end

-- Ready False for this clears without anyone acting: the controller's
-- first look. Every other reason, including one added later, needs a
-- human and reads Degraded (the locks on the store cannot be acquired
-- safely).
local passing = {Reconciling = true}
local reason = ready.reason or ""
local message = ready.message or ""
if ready.status == "False" and not passing[reason] then
  hs.status = "Degraded"
  hs.message = reason .. ": " .. message
  return hs
end
if ready.status ~= "True" then
  hs.message = reason .. ": " .. message
  return hs
end

-- Preflight False (an eviction policy that can evict lock keys, memory
-- near its limit) does not make Ready False, and Argo CD has no
-- "warning" health: the message carries it.
hs.status = "Healthy"
hs.message = message
local preflight = condition("Preflight")
if preflight ~= nil and preflight.status == "False" then
  hs.message = hs.message .. "; Preflight False (" .. (preflight.reason or "") .. "): " .. (preflight.message or "")
end
return hs

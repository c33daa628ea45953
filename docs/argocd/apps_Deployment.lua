-- Argo CD health of an apps Deployment, for clusters that run
-- active/standby Deployments (docs/argocd.md): argocd-cm key
-- resource.customizations.health.apps_Deployment.
--
-- A Deployment whose pods are Ready only while they hold a redlease lock
-- (`lockctl run --ready-addr`) has one available replica of N, and Argo
-- CD's built-in check calls it Progressing for ever. This script replaces
-- the built-in check for every Deployment, so a Deployment without the
-- annotation redlease.io/active-standby: "true" gets the built-in logic,
-- copied here from Argo CD's gitops-engine (pkg/health/health_deployment.go,
-- unchanged in substance since 2022) with the same messages;
-- test/docs/argocd_test.go holds both to fixtures. Argo CD runs it without Lua's string library.
local hs = {status = "Healthy"}
local spec = obj.spec or {}
local status = obj.status or {}
local name = obj.metadata.name or ""
local annotations = obj.metadata.annotations or {}
local standby = annotations["redlease.io/active-standby"] == "true"
if spec.paused == true then
  return {status = "Suspended", message = "Deployment is paused"}
end
if (obj.metadata.generation or 0) > (status.observedGeneration or 0) then
  return {status = "Progressing", message = "Waiting for rollout to finish: observed deployment generation less than desired generation"}
end
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Progressing" and c.reason == "ProgressDeadlineExceeded" then
    local message = "Deployment \"" .. name .. "\" exceeded its progress deadline"
    if standby then
      -- One available replica of N never completes a rollout: the
      -- deadline fires ten minutes after every healthy rollout too.
      message = message .. ": an active/standby Deployment needs progressDeadlineSeconds: 2147483647"
    end
    return {status = "Degraded", message = message}
  end
end
local updated = status.updatedReplicas or 0
local replicas = status.replicas or 0
local available = status.availableReplicas or 0
if spec.replicas ~= nil and updated < spec.replicas then
  return {status = "Progressing", message = "Waiting for rollout to finish: " .. updated .. " out of " .. spec.replicas .. " new replicas have been updated..."}
end
if replicas > updated then
  return {status = "Progressing", message = "Waiting for rollout to finish: " .. (replicas - updated) .. " old replicas are pending termination..."}
end

if not standby then
  if available < updated then
    return {status = "Progressing", message = "Waiting for rollout to finish: " .. available .. " of " .. updated .. " updated replicas are available..."}
  end
  return hs
end

-- Active/standby: the rollout is done (every replica updated, no old one
-- left), and exactly one replica, the lock's holder, should be available.
if updated == 0 then
  return hs
end
if available == 0 then
  -- A takeover (up to the lock's TTL after a crash), or no replica can
  -- take the lock: a lock or store that is not Ready is Degraded on its
  -- own; a release that crashes is not seen here (docs/argocd.md).
  return {status = "Progressing", message = "Active/standby: no replica holds the lock yet (0 of " .. updated .. " available)"}
end
if available > 1 then
  -- lockctl never answers /readyz 200 in two pods at once: the probe is
  -- not on lockctl's /readyz, or the annotation is on the wrong Deployment.
  return {status = "Degraded", message = "Active/standby: " .. available .. " of " .. updated .. " replicas are available, one expected: is the readinessProbe on lockctl's /readyz?"}
end
hs.message = "Active/standby: 1 of " .. updated .. " replicas available (the lock's holder), " .. (updated - 1) .. " standing by"
return hs

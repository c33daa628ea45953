package controllers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// setLockStatus writes what the round observed into the lock's status. It
// only sets fields; the caller compares and patches.
func setLockStatus(rd *round) {
	dl := rd.dl
	st := &dl.Status
	st.ObservedGeneration = dl.Generation
	if st.Key != rd.key {
		// The holder and the high-water mark belong to the key: a lock
		// stored before its key became immutable starts afresh.
		st.Holder, st.FenceHighWater = nil, 0
		st.Held, st.Holders, st.Waiting = 0, nil, nil
		st.FailoverQuarantine, st.QuarantinedUntil = nil, nil
	}
	st.Key = rd.key
	st.Connection = rd.connection
	st.CredentialsSecretRef = nil
	if rd.credentialsSecret != "" {
		st.CredentialsSecretRef = &v1alpha1.LocalSecretReference{Name: rd.credentialsSecret}
	}
	st.Master = rd.masterAddr
	st.Quorum = rd.quorumN
	st.Permits = clampInt32(dl.Spec.PermitsOrDefault())
	if rd.holderRead {
		st.Holder = rd.holder
		st.FenceHighWater = rd.highWater
		st.Held, st.Holders = rd.held, rd.holders
		st.Waiting = rd.waiting
	}
	setQuarantineStatus(rd, st, dl.Generation)
	if dl.Spec.Inline() {
		st.Endpoints = endpointStatuses(rd)
		setStoreConditions(rd, &st.Conditions, dl.Generation)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStoreReady)
		return
	}
	st.Endpoints = nil
	for _, typ := range []string{v1alpha1.ConditionEndpointsResolved, v1alpha1.ConditionReplicationGuarded, v1alpha1.ConditionQuorumAvailable, v1alpha1.ConditionPreflight} {
		meta.RemoveStatusCondition(&st.Conditions, typ)
	}
	setCondition(&st.Conditions, rd, dl.Generation, v1alpha1.ConditionStoreReady, rd.storeReady)
	setCondition(&st.Conditions, rd, dl.Generation, v1alpha1.ConditionReady, readyOnStore(rd))
}

// setStoreStatus writes what a store round observed into a store's status.
func setStoreStatus(rd *round, st *v1alpha1.LockStoreStatus, generation int64) {
	st.ObservedGeneration = generation
	st.Endpoints = endpointStatuses(rd)
	st.Master = rd.masterAddr
	st.Quorum = 0
	if rd.store.redis.Mode == v1alpha1.RedisModeRedlock {
		st.Quorum = redlockQuorum(rd.store.redis)
	}
	st.Tenants = rd.tenantCount
	setStoreConditions(rd, &st.Conditions, generation)
	setCondition(&st.Conditions, rd, generation, v1alpha1.ConditionFunctionsLoaded, rd.functions)
	setCondition(&st.Conditions, rd, generation, v1alpha1.ConditionTenantsProvisioned, rd.tenants)
}

// setCondition sets condition typ from c, stamped with the round's time.
func setCondition(conds *[]metav1.Condition, rd *round, generation int64, typ string, c conditionResult) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: c.status, Reason: c.reason, Message: c.message,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(rd.now.Truncate(time.Second)),
	})
}

// setStoreConditions sets the conditions of the store phases (an inline
// lock's or a store's): EndpointsResolved, ReplicationGuarded or
// QuorumAvailable by mode, Preflight, and Ready.
func setStoreConditions(rd *round, conds *[]metav1.Condition, generation int64) {
	mode := rd.store.redis.Mode
	set := func(typ string, c conditionResult) { setCondition(conds, rd, generation, typ, c) }
	// notChecked stands in for a condition a failed round did not reach.
	notChecked := func(c conditionResult) conditionResult {
		if c.set {
			return c
		}
		reason := firstNonEmpty(rd.failReason, firstNonEmpty(rd.masterReason, v1alpha1.ReasonReconciling))
		return result(metav1.ConditionUnknown, reason, "not checked: "+firstNonEmpty(rd.failMessage, firstNonEmpty(rd.masterMessage, "the servers were not reached")))
	}

	set(v1alpha1.ConditionEndpointsResolved, endpointsResolved(rd))
	switch mode {
	case v1alpha1.RedisModeRedlock:
		set(v1alpha1.ConditionQuorumAvailable, notChecked(rd.quorum))
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionReplicationGuarded)
	case v1alpha1.RedisModeStandalone:
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionQuorumAvailable)
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionReplicationGuarded)
	default:
		set(v1alpha1.ConditionReplicationGuarded, notChecked(rd.guard))
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionQuorumAvailable)
	}
	set(v1alpha1.ConditionPreflight, notChecked(rd.preflight))
	set(v1alpha1.ConditionReady, ready(rd))
}

// ready is True when everything the lock needs is in force; else the
// reason of the first thing that is not.
func ready(rd *round) conditionResult {
	mode := rd.store.redis.Mode
	var c conditionResult
	switch {
	case rd.failReason != "":
		c = result(metav1.ConditionFalse, rd.failReason, rd.failMessage)
	case mode == v1alpha1.RedisModeRedlock:
		if rd.quorum.status == metav1.ConditionTrue {
			c = result(metav1.ConditionTrue, v1alpha1.ReasonAvailable, "Redlock: "+rd.quorum.message)
		} else {
			c = result(metav1.ConditionFalse, rd.quorum.reason, rd.quorum.message)
		}
	case rd.masterReason != "":
		c = result(metav1.ConditionFalse, rd.masterReason, rd.masterMessage)
	case mode != v1alpha1.RedisModeStandalone && rd.guard.set && rd.guard.status != metav1.ConditionTrue:
		c = result(metav1.ConditionFalse, rd.guard.reason, rd.guard.message)
	case rd.quarantine.unsound():
		c = result(metav1.ConditionFalse, rd.quarantine.cond.reason, rd.quarantine.cond.message)
	default:
		var msg string
		switch mode {
		case v1alpha1.RedisModeCluster:
			msg = fmt.Sprintf("Cluster: %d master(s) answer", len(rd.masters))
			if rd.slot >= 0 {
				msg += fmt.Sprintf("; the key's slot %d is served by %s", rd.slot, rd.masterAddr)
			}
		default:
			msg = fmt.Sprintf("%s: master %s answers", mode, rd.masterAddr)
		}
		if rd.guard.set && rd.guard.reason != v1alpha1.ReasonNotRequested {
			msg += "; replica guard in force"
		}
		c = result(metav1.ConditionTrue, v1alpha1.ReasonAvailable, msg)
	}
	// A fence floor raised in this round is reported once, here and in an
	// Event; the next round's message drops it.
	for _, note := range rd.raised {
		c.message += "; " + v1alpha1.ReasonFenceFloorRaised + ": " + note
	}
	return c
}

// endpointsResolved: True when endpoints were found and all answered.
func endpointsResolved(rd *round) conditionResult {
	if rd.failReason != "" {
		return result(metav1.ConditionFalse, rd.failReason, rd.failMessage)
	}
	all := append(append([]*endpoint(nil), rd.endpoints...), rd.sentinels...)
	var down []string
	auth := false
	roles := map[string]int{}
	for _, e := range all {
		if !e.reachable() {
			reason, msg := unreachableReason(e)
			auth = auth || reason == v1alpha1.ReasonAuthFailed
			down = append(down, msg)
			continue
		}
		roles[roleWord(e)]++
	}
	if len(down) > 0 {
		reason := v1alpha1.ReasonEndpointUnreachable
		if auth {
			reason = v1alpha1.ReasonAuthFailed
		}
		return result(metav1.ConditionFalse, reason, fmt.Sprintf("%d of %d endpoint(s) do not answer: %s", len(down), len(all), joinList(down)))
	}
	var parts []string
	for _, role := range []string{string(redisprobe.RoleMaster), string(redisprobe.RoleReplica), string(redisprobe.RoleSentinel), "unknown"} {
		if n := roles[role]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, role))
		}
	}
	return result(metav1.ConditionTrue, v1alpha1.ReasonEndpointsResolved, fmt.Sprintf("%d endpoint(s) answer (%s)", len(all), strings.Join(parts, ", ")))
}

// endpointStatuses is status.endpoints: data servers, then Sentinels.
func endpointStatuses(rd *round) []v1alpha1.EndpointStatus {
	var out []v1alpha1.EndpointStatus
	seen := map[string]bool{}
	for _, e := range append(append([]*endpoint(nil), rd.endpoints...), rd.sentinels...) {
		if seen[e.addr] || !e.probed {
			continue
		}
		seen[e.addr] = true
		es := v1alpha1.EndpointStatus{Address: e.addr, Role: v1alpha1.EndpointRoleUnknown, Reachable: e.reachable()}
		if e.sentinel {
			es.Role = v1alpha1.EndpointRoleSentinel
		}
		if e.reachable() {
			es.Version = e.info.Version
			es.Server = e.info.Server
			es.RunID = e.info.RunID
			switch e.info.Role {
			case redisprobe.RoleMaster:
				es.Role = v1alpha1.EndpointRoleMaster
				es.ConnectedReplicas = ptr.To(clampInt32(e.info.ConnectedReplicas))
				es.Slots = rd.slotsOf(e.addr)
				es.Libraries = e.libraries
			case redisprobe.RoleReplica:
				es.Role = v1alpha1.EndpointRoleReplica
			case redisprobe.RoleSentinel:
				es.Role = v1alpha1.EndpointRoleSentinel
			}
		} else {
			es.LastError = redisprobe.StatusText(e.err)
		}
		out = append(out, es)
		if len(out) == maxEndpoints {
			break
		}
	}
	return out
}

// maxEndpoints is status.endpoints' schema bound.
const maxEndpoints = 128

// readyStatus is the Ready condition's status, or "".
func readyStatus(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		return string(c.Status)
	}
	return ""
}

// statusUrgent reports whether next differs from prev in more than what
// busy locks change all the time (the holder, a semaphore's held and
// holders, the waiting line, fenceHighWater, condition messages): a condition's status or reason, the generation observed, what
// pods connect to, or a fence floor this round raised. Those are written
// at once; the rest at most once per probe interval (DESIGN §10.1).
func statusUrgent(prev, next *v1alpha1.DistributedLockStatus, rd *round) bool {
	if len(rd.raised) > 0 {
		return true
	}
	strip := func(s *v1alpha1.DistributedLockStatus) *v1alpha1.DistributedLockStatus {
		c := s.DeepCopy()
		c.Holder, c.FenceHighWater, c.Held, c.Holders, c.Waiting = nil, 0, 0, nil, nil
		for i := range c.Conditions {
			c.Conditions[i].Message = ""
		}
		return c
	}
	return !equality.Semantic.DeepEqual(strip(prev), strip(next))
}

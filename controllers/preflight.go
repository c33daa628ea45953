package controllers

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
)

// memoryNearLimit is the share of maxmemory from which Preflight warns
// (MemoryNearLimit): with noeviction, writes fail with OOM at the limit.
const memoryNearLimit = 0.9

// preflight checks the server settings that endanger locks on every
// reachable data server (a replica can become the master): an eviction
// policy other than noeviction (Preflight False, EvictionPolicyUnsafe),
// memory near maxmemory (Preflight False, MemoryNearLimit: a shared
// server's memory is one pool that ACLs cannot divide), and no persistence
// (said in the message, reason PersistenceDisabled: fences then rely on the
// clock floor). A setting it cannot read (CONFIG refused, as managed
// services do, or INFO without maxmemory_policy) makes it Unknown,
// ConfigUnavailable, saying what to check by hand: a check that did not
// happen must not read as passed.
func (r *DistributedLockReconciler) preflight(ctx context.Context, rd *round) {
	var unsafe, full, noPersistence, unknown, unknownPolicy []string
	reachable := 0
	for _, e := range rd.endpoints {
		if !e.reachable() {
			continue
		}
		reachable++
		switch p := e.info.MaxMemoryPolicy; p {
		case "":
			unknownPolicy = append(unknownPolicy, e.addr)
		case "noeviction":
		default:
			unsafe = append(unsafe, fmt.Sprintf("%s (%s)", e.addr, p))
		}
		if used, ok := e.info.MemoryUsed(); ok && used >= memoryNearLimit {
			full = append(full, fmt.Sprintf("%s (%.0f %% of maxmemory %d bytes)", e.addr, 100*used, e.info.MaxMemory))
		}
		if e.info.AOFEnabled {
			continue
		}
		cfg, err := readConfig(ctx, e)
		switch {
		case err != nil:
			unknown = append(unknown, e.addr)
		case cfg.Save == "":
			noPersistence = append(noPersistence, e.addr)
		}
	}
	if reachable == 0 {
		reason, msg := firstNonEmpty(rd.masterReason, v1alpha1.ReasonEndpointUnreachable), "no server answered, nothing to check"
		rd.preflight = result(metav1.ConditionUnknown, reason, msg)
		return
	}
	var notes []string
	if len(noPersistence) > 0 {
		notes = append(notes, fmt.Sprintf("persistence is off (no RDB save, no AOF) on %s: a restart forgets the locks, and fences then rely on the counter restarting from the server clock", listAddrs(noPersistence)))
	}
	if len(unknown) > 0 {
		notes = append(notes, fmt.Sprintf("persistence cannot be read on %s (CONFIG GET save is disabled, renamed or denied, and AOF is off): check with your provider that RDB snapshots or AOF are on (without them a restart forgets the locks and fences rely on the server clock), or allow CONFIG GET for the controller's user", listAddrs(unknown)))
	}
	if len(unknownPolicy) > 0 {
		notes = append(notes, fmt.Sprintf("the eviction policy cannot be read on %s (INFO has no maxmemory_policy): check with your provider that maxmemory-policy is noeviction", listAddrs(unknownPolicy)))
	}
	if len(full) > 0 {
		notes = append([]string{fmt.Sprintf("memory is near its limit on %s: at maxmemory, writes fail (acquisitions and renewals included); raise maxmemory or find what fills it", strings.Join(full, ", "))}, notes...)
	}
	switch {
	case len(unsafe) > 0:
		msg := fmt.Sprintf("maxmemory-policy is not noeviction on %s: Redis can evict lock keys and fence counters under memory pressure; set maxmemory-policy noeviction", strings.Join(unsafe, ", "))
		rd.preflight = result(metav1.ConditionFalse, v1alpha1.ReasonEvictionPolicyUnsafe, joinNotes(msg, notes))
	case len(full) > 0:
		rd.preflight = result(metav1.ConditionFalse, v1alpha1.ReasonMemoryNearLimit, joinNotes(policyChecked(unknownPolicy), notes))
	case len(unknown) > 0 || len(unknownPolicy) > 0:
		rd.preflight = result(metav1.ConditionUnknown, v1alpha1.ReasonConfigUnavailable, joinNotes(policyChecked(unknownPolicy), notes))
	case len(noPersistence) > 0:
		rd.preflight = result(metav1.ConditionTrue, v1alpha1.ReasonPersistenceDisabled, joinNotes("eviction policy is noeviction", notes))
	default:
		rd.preflight = result(metav1.ConditionTrue, v1alpha1.ReasonPreflightPassed, "eviction policy is noeviction and persistence is on")
	}
}

func joinNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}

// policyChecked opens a Preflight message that is not about the eviction
// policy: whether every server's policy could be read (and was noeviction).
func policyChecked(unknownPolicy []string) string {
	if len(unknownPolicy) > 0 {
		return "not every setting could be checked"
	}
	return "eviction policy is noeviction"
}

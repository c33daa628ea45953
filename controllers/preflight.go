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
// clock floor).
func (r *DistributedLockReconciler) preflight(ctx context.Context, rd *round) {
	var unsafe, full, noPersistence, unknown []string
	reachable := 0
	for _, e := range rd.endpoints {
		if !e.reachable() {
			continue
		}
		reachable++
		if p := e.info.MaxMemoryPolicy; p != "" && p != "noeviction" {
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
		notes = append(notes, fmt.Sprintf("persistence unknown on %s (CONFIG unavailable)", listAddrs(unknown)))
	}
	if len(full) > 0 {
		notes = append([]string{fmt.Sprintf("memory is near its limit on %s: at maxmemory, writes fail (acquisitions and renewals included); raise maxmemory or find what fills it", strings.Join(full, ", "))}, notes...)
	}
	switch {
	case len(unsafe) > 0:
		msg := fmt.Sprintf("maxmemory-policy is not noeviction on %s: Redis can evict lock keys and fence counters under memory pressure; set maxmemory-policy noeviction", strings.Join(unsafe, ", "))
		rd.preflight = result(metav1.ConditionFalse, v1alpha1.ReasonEvictionPolicyUnsafe, joinNotes(msg, notes))
	case len(full) > 0:
		rd.preflight = result(metav1.ConditionFalse, v1alpha1.ReasonMemoryNearLimit, joinNotes("eviction policy is noeviction", notes))
	case len(noPersistence) > 0:
		rd.preflight = result(metav1.ConditionTrue, v1alpha1.ReasonPersistenceDisabled, joinNotes("eviction policy is noeviction", notes))
	default:
		msg := "eviction policy is noeviction and persistence is on"
		if len(unknown) > 0 {
			msg = "eviction policy is noeviction"
		}
		rd.preflight = result(metav1.ConditionTrue, v1alpha1.ReasonPreflightPassed, joinNotes(msg, notes))
	}
}

func joinNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}

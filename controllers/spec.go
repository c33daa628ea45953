package controllers

import (
	"fmt"

	"github.com/redlease/redlease/api/v1alpha1"
)

// specProblem returns why the controller cannot use a spec that the API
// server holds, or "" when it can. The CRD's rules refuse such specs, but an
// object stored before a rule was added stays stored, and is served, as it
// was: the controller reports it as InvalidSpec (Ready False) instead of
// acting on it. Only deleting and re-creating the lock helps when the
// offending fields are immutable.
//
// redis is the topology the lock runs on: its own, or its store's.
func specProblem(spec *v1alpha1.DistributedLockSpec, r *v1alpha1.RedisSpec) string {
	if w := spec.Safety; w != nil && w.WaitForReplicas > 0 && r.Mode != v1alpha1.RedisModeReplicated && r.Mode != v1alpha1.RedisModeSentinel && r.Mode != v1alpha1.RedisModeCluster {
		return fmt.Sprintf("spec.safety.waitForReplicas needs replicas, and the lock's servers run in %s mode: use it with Replicated, Sentinel or Cluster", r.Mode)
	}
	if r.Mode == v1alpha1.RedisModeRedlock {
		if spec.FIFO() {
			return "spec.fairness FIFO needs the waiting line, which Redlock does not have (the line would need a quorum of its own): use Default with Redlock"
		}
		if spec.TicketOrder() {
			return "spec.lineOrder Ticket orders the waiting line, which Redlock does not have: use Clock (or leave it out) with Redlock"
		}
		if spec.Semaphore() {
			return fmt.Sprintf("spec.permits %d needs one Redis deployment: on Redlock a majority of nodes per holder does not bound the holders; use 1 with Redlock", spec.Permits)
		}
		switch n := len(r.Addresses); {
		case r.Service != nil:
			return "spec.redis.service: Redlock needs an explicit, odd list of ≥ 3 stable addresses (e.g. StatefulSet DNS names): " +
				"a Service's endpoints change with pod IPs, so membership and quorum would change too; " +
				"delete the lock and re-create it with spec.redis.addresses"
		case n < 3 || n%2 == 0:
			return fmt.Sprintf("spec.redis.addresses: Redlock needs an odd number (3, 5, 7...) of independent nodes, found %d", n)
		}
	}
	if ri := spec.RenewInterval; ri != nil {
		ttl := spec.TTLOrDefault()
		if most := v1alpha1.MaxRenewInterval(ttl); ri.Duration > most {
			return fmt.Sprintf("spec.renewInterval %v must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms, at most %v for ttl %v",
				ri.Duration, most, ttl)
		}
	}
	return ""
}

package controllers

import (
	"fmt"
	"math"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// redlockQuorum is the number of nodes a Redlock lease needs: a majority,
// len/2+1, of the spec's addresses, however many of them answer (an
// unreachable node is a failed vote, never a smaller quorum). It is 0 for a
// spec without a usable node list (see specProblem), which has no quorum,
// and for one too long to count in an int32 (the API server bounds the list
// far below that).
func redlockQuorum(r *v1alpha1.RedisSpec) int32 {
	n := len(r.Addresses)
	if r.Service != nil || n < 3 || n%2 == 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n/2 + 1)
}

// checkRedlock counts the independent reachable nodes: addresses that reach
// one server (same run_id) or servers that replicate one another (same
// replication ID) are one node, and a replica takes no writes. Dependent
// nodes make QuorumAvailable False with NodesNotIndependent: a majority of
// them can be lost at once, which is Redlock's whole premise.
func (r *DistributedLockReconciler) checkRedlock(rd *round) {
	rd.quorumN = redlockQuorum(rd.store.redis)
	groups, notes := independentGroups(rd.endpoints)
	independent := 0
	for _, g := range groups {
		for _, e := range g {
			if e.info.Role == redisprobe.RoleMaster {
				independent++
				break
			}
		}
	}
	for _, e := range rd.endpoints {
		if e.reachable() && e.info.Role != redisprobe.RoleMaster {
			notes = append(notes, fmt.Sprintf("%s is a %s and takes no writes", e.addr, roleWord(e)))
		}
	}
	count := fmt.Sprintf("%d independent reachable node(s) of %d, quorum %d", independent, len(rd.endpoints), rd.quorumN)
	switch {
	case len(groups) < countReachable(rd.endpoints):
		rd.quorum = result(metav1.ConditionFalse, v1alpha1.ReasonNodesNotIndependent,
			fmt.Sprintf("%s: %s; Redlock needs independent servers (one server, or a master and its replica, can lose a majority at once)", count, strings.Join(notes, "; ")))
	case int32(independent) < rd.quorumN:
		msg := count
		if len(notes) > 0 {
			msg += ": " + strings.Join(notes, "; ")
		}
		if reason, down := unreachableList(rd.endpoints); down != "" {
			msg += "; " + down
			if reason == v1alpha1.ReasonAuthFailed && independent == 0 {
				rd.quorum = result(metav1.ConditionFalse, v1alpha1.ReasonAuthFailed, msg)
				return
			}
		}
		rd.quorum = result(metav1.ConditionFalse, v1alpha1.ReasonQuorumUnavailable, msg)
	default:
		rd.quorum = result(metav1.ConditionTrue, v1alpha1.ReasonQuorumReached, count)
	}
}

// independentGroups groups the reachable endpoints that are not
// independent: same run_id (one server) or same replication ID (a master
// and its replicas). It returns the groups and why nodes were merged.
func independentGroups(eps []*endpoint) ([][]*endpoint, []string) {
	var reach []*endpoint
	for _, e := range eps {
		if e.reachable() {
			reach = append(reach, e)
		}
	}
	parent := make([]int, len(reach))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	var notes []string
	for i := range reach {
		for j := i + 1; j < len(reach); j++ {
			a, b := reach[i].info, reach[j].info
			switch {
			case a.RunID != "" && a.RunID == b.RunID:
				notes = append(notes, fmt.Sprintf("%s and %s are the same server (run_id %s)", reach[i].addr, reach[j].addr, short(a.RunID)))
			case a.ReplID != "" && a.ReplID == b.ReplID:
				notes = append(notes, fmt.Sprintf("%s and %s replicate one another (replication ID %s)", reach[i].addr, reach[j].addr, short(a.ReplID)))
			default:
				continue
			}
			parent[find(i)] = find(j)
		}
	}
	byRoot := map[int][]*endpoint{}
	var order []int
	for i, e := range reach {
		root := find(i)
		if _, ok := byRoot[root]; !ok {
			order = append(order, root)
		}
		byRoot[root] = append(byRoot[root], e)
	}
	groups := make([][]*endpoint, 0, len(order))
	for _, root := range order {
		groups = append(groups, byRoot[root])
	}
	return groups, notes
}

func countReachable(eps []*endpoint) int {
	n := 0
	for _, e := range eps {
		if e.reachable() {
			n++
		}
	}
	return n
}

// unreachableList names the endpoints that did not answer, and AuthFailed
// if any refused the credentials.
func unreachableList(eps []*endpoint) (reason, text string) {
	var down []string
	for _, e := range eps {
		if e.reachable() {
			continue
		}
		rs, msg := unreachableReason(e)
		if rs == v1alpha1.ReasonAuthFailed {
			reason = rs
		}
		down = append(down, msg)
	}
	if reason == "" && len(down) > 0 {
		reason = v1alpha1.ReasonEndpointUnreachable
	}
	return reason, joinList(down)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

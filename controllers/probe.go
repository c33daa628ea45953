package controllers

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// client returns the pooled client for a server (or a Sentinel), with the
// lock's credentials.
func (rd *round) client(addr string, sentinel bool) (*redis.Client, error) {
	t := redisprobe.Target{Addr: addr, Credentials: rd.creds.servers}
	switch {
	case sentinel:
		t.Credentials = rd.creds.sentinels
	case rd.dl.Spec.Redis.Mode != v1alpha1.RedisModeCluster:
		t.DB = int(rd.dl.Spec.Redis.DB)
	}
	return rd.session.Client(t)
}

// probeEndpoints probes the data servers; in Replicated mode it then
// probes the replicas the masters list and the masters the replicas follow
// (one hop), keeping a discovered server only if it is not one already
// listed under another address (same run_id).
func (r *DistributedLockReconciler) probeEndpoints(ctx context.Context, rd *round) {
	r.probeAll(ctx, rd, rd.endpoints)
	if rd.dl.Spec.Redis.Mode == v1alpha1.RedisModeReplicated {
		known := map[string]bool{}
		for _, e := range rd.endpoints {
			known[e.addr] = true
		}
		var found []*endpoint
		for _, e := range rd.endpoints {
			if !e.reachable() {
				continue
			}
			var next []string
			for _, rep := range e.info.Replicas {
				next = append(next, rep.Addr)
			}
			if e.info.MasterAddr != "" {
				next = append(next, e.info.MasterAddr)
			}
			for _, a := range next {
				if !known[a] {
					known[a] = true
					found = append(found, &endpoint{addr: a, discovered: true})
				}
			}
		}
		r.probeAll(ctx, rd, found)
		runIDs := map[string]bool{}
		for _, e := range rd.endpoints {
			if e.reachable() && e.info.RunID != "" {
				runIDs[e.info.RunID] = true
			}
		}
		for _, e := range found {
			if e.reachable() && runIDs[e.info.RunID] {
				continue // a listed server under another name
			}
			rd.endpoints = append(rd.endpoints, e)
		}
	}
	sortEndpoints(rd.endpoints)
}

// probeAll probes eps concurrently (PING, INFO), each bounded by the
// client's timeouts and ctx.
func (r *DistributedLockReconciler) probeAll(ctx context.Context, rd *round, eps []*endpoint) {
	var wg sync.WaitGroup
	for _, e := range eps {
		wg.Go(func() {
			c, err := rd.client(e.addr, e.sentinel)
			if err == nil {
				e.client = c
				e.info, err = redisprobe.Probe(ctx, c)
			}
			e.probed, e.err = true, err
			probesTotal.WithLabelValues(probeResult(err)).Inc()
		})
	}
	wg.Wait()
}

func probeResult(err error) string {
	switch {
	case err == nil:
		return "reachable"
	case redisprobe.IsAuthError(err):
		return "auth_failed"
	default:
		return "unreachable"
	}
}

// pickMaster finds the server(s) that take the lock's writes.
func (r *DistributedLockReconciler) pickMaster(_ context.Context, rd *round) {
	switch rd.dl.Spec.Redis.Mode {
	case v1alpha1.RedisModeStandalone:
		e := rd.endpoints[0]
		rd.masterAddr = e.addr
		switch {
		case !e.reachable():
			rd.masterReason, rd.masterMessage = unreachableReason(e)
		case e.info.Role != redisprobe.RoleMaster:
			rd.masterReason = v1alpha1.ReasonMasterUnknown
			rd.masterMessage = fmt.Sprintf("%s is a %s, not a master: Standalone mode needs a server that takes writes (for a master with replicas use Replicated mode)", e.addr, roleWord(e))
		default:
			rd.master = e
		}
	case v1alpha1.RedisModeReplicated:
		var masters []*endpoint
		runIDs := map[string]bool{}
		for _, e := range rd.endpoints {
			if e.isMaster() && !runIDs[e.info.RunID] {
				runIDs[e.info.RunID] = true
				masters = append(masters, e)
			}
		}
		switch len(masters) {
		case 1:
			rd.master = masters[0]
		case 0:
			if reason, msg, ok := unreachableSummary(rd.endpoints, "server"); ok {
				rd.masterReason, rd.masterMessage = reason, msg
			} else {
				rd.masterReason = v1alpha1.ReasonMasterUnknown
				rd.masterMessage = "no reachable server is a master"
			}
		default:
			var addrs []string
			for _, m := range masters {
				addrs = append(addrs, m.addr)
			}
			rd.masterReason = v1alpha1.ReasonMasterUnknown
			rd.masterMessage = fmt.Sprintf("%d servers claim to be master (%s): locks on either could be lost", len(masters), listAddrs(addrs))
		}
	case v1alpha1.RedisModeSentinel:
		rd.masterAddr = rd.sentinelMaster
		e := rd.find(rd.sentinelMaster)
		switch {
		case e == nil:
			rd.masterReason, rd.masterMessage = v1alpha1.ReasonMasterUnknown, "the Sentinels named no master"
		case !e.reachable():
			rd.masterReason, rd.masterMessage = unreachableReason(e)
			rd.masterMessage = "the master the Sentinels name: " + rd.masterMessage
		case e.info.Role != redisprobe.RoleMaster:
			rd.masterReason = v1alpha1.ReasonMasterUnknown
			rd.masterMessage = fmt.Sprintf("the Sentinels name %s, which reports role %s (a failover in progress?)", e.addr, roleWord(e))
		default:
			rd.master = e
		}
	case v1alpha1.RedisModeCluster:
		var problems []string
		reason := ""
		for _, sh := range rd.shards {
			e := rd.find(sh.Master)
			switch {
			case e == nil:
				problems = append(problems, fmt.Sprintf("a shard (slots %s) has no master", slotRanges(sh.Slots)))
				reason = firstNonEmpty(reason, v1alpha1.ReasonMasterUnknown)
			case !e.reachable():
				rs, msg := unreachableReason(e)
				problems = append(problems, msg)
				reason = firstNonEmpty(reason, rs)
			case e.info.Role != redisprobe.RoleMaster || !sh.MasterHealthy:
				problems = append(problems, fmt.Sprintf("master %s is failing or reports role %s", e.addr, roleWord(e)))
				reason = firstNonEmpty(reason, v1alpha1.ReasonMasterUnknown)
			default:
				rd.masters = append(rd.masters, e)
				if rd.slot >= 0 && sh.Serves(rd.slot) {
					rd.master, rd.masterAddr = e, e.addr
				}
			}
		}
		if len(problems) == 0 && rd.master == nil {
			if rd.slot < 0 {
				problems, reason = append(problems, "CLUSTER KEYSLOT failed: the key's master is unknown"), v1alpha1.ReasonMasterUnknown
			} else {
				problems, reason = append(problems, fmt.Sprintf("no master serves the key's slot %d", rd.slot)), v1alpha1.ReasonMasterUnknown
			}
		}
		if len(problems) > 0 {
			rd.masterReason, rd.masterMessage = reason, strings.Join(problems, "; ")
		}
		return
	case v1alpha1.RedisModeRedlock:
		for _, e := range rd.endpoints {
			if e.isMaster() {
				rd.masters = append(rd.masters, e)
			}
		}
		return
	}
	if rd.master != nil {
		rd.masters = []*endpoint{rd.master}
		rd.masterAddr = rd.master.addr
	}
}

func (rd *round) find(addr string) *endpoint {
	for _, e := range rd.endpoints {
		if e.addr == addr {
			return e
		}
	}
	return nil
}

// unreachableReason is AuthFailed or EndpointUnreachable for e, with a
// message.
func unreachableReason(e *endpoint) (string, string) {
	if redisprobe.IsAuthError(e.err) {
		return v1alpha1.ReasonAuthFailed, fmt.Sprintf("%s refused the credentials: %s", e.addr, errorText(e.err))
	}
	return v1alpha1.ReasonEndpointUnreachable, fmt.Sprintf("%s is unreachable: %s", e.addr, errorText(e.err))
}

func roleWord(e *endpoint) string {
	if e.info.Role == "" {
		return "unknown"
	}
	return string(e.info.Role)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func slotRanges(r [][2]int) string {
	var parts []string
	for _, s := range r {
		if s[0] == s[1] {
			parts = append(parts, fmt.Sprint(s[0]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s[0], s[1]))
		}
	}
	return strings.Join(parts, ",")
}

// sortEndpoints orders endpoints by role (masters, replicas, unknown),
// then address, so that status does not change with discovery order.
func sortEndpoints(eps []*endpoint) {
	rank := func(e *endpoint) int {
		switch {
		case !e.reachable():
			return 2
		case e.info.Role == redisprobe.RoleMaster:
			return 0
		default:
			return 1
		}
	}
	slices.SortStableFunc(eps, func(a, b *endpoint) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.addr, b.addr)
	})
}

// localAddr matches the local half of "read tcp 10.0.0.5:51234->10.0.0.7:6379":
// an ephemeral port that changes with every connection.
var localAddr = regexp.MustCompile(`\b(tcp[46]?|udp[46]?) \S+->`)

// errorText is an error as status shows it: one line, bounded, without the
// local ephemeral address, so that the same failure reads the same on every
// probe (and does not rewrite status).
func errorText(err error) string {
	if err == nil {
		return ""
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	s = localAddr.ReplaceAllString(s, "$1 ")
	const most = 300
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}

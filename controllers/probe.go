package controllers

import (
	"context"
	"errors"
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
	case rd.store.redis.Mode != v1alpha1.RedisModeCluster:
		t.DB = int(rd.store.redis.DB)
	}
	return rd.session.Client(t)
}

// probeEndpoints probes the data servers; in Replicated mode it then
// probes the replicas the masters list and the masters the replicas follow
// (one hop), keeping a discovered server only if it is not one already
// listed under another address (same run_id). It fails the round, before
// probing them, when the servers list more than maxDiscovered.
func (r *DistributedLockReconciler) probeEndpoints(ctx context.Context, rd *round) bool {
	r.probeAll(ctx, rd, rd.endpoints)
	if rd.store.redis.Mode == v1alpha1.RedisModeReplicated {
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
		if rd.tooManyEndpoints(len(rd.endpoints)+len(found), "with the servers the masters and replicas list") {
			return false
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
	return true
}

// probeAll probes eps concurrently (PING, INFO), each bounded by the
// client's timeouts and ctx, at most probesPerRound at once and in the
// process probesPerProcess; a probe that panics is an endpoint error.
func (r *DistributedLockReconciler) probeAll(ctx context.Context, rd *round, eps []*endpoint) {
	var wg sync.WaitGroup
	inRound := make(chan struct{}, probesPerRound)
	for _, e := range eps {
		inRound <- struct{}{}
		wg.Go(func() {
			defer func() { <-inRound }()
			err := redisprobe.Recover(ctx, func() error {
				if err := r.probes.take(ctx); err != nil {
					return err
				}
				defer r.probes.give()
				c, err := rd.client(e.addr, e.sentinel)
				if err != nil {
					return err
				}
				e.client = c
				e.info, err = redisprobe.Probe(ctx, c)
				return err
			})
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
	var p masterPick
	switch rd.store.redis.Mode {
	case v1alpha1.RedisModeStandalone:
		p = pickStandalone(rd.endpoints[0])
	case v1alpha1.RedisModeReplicated:
		p = pickReplicated(rd.endpoints)
	case v1alpha1.RedisModeSentinel:
		p = pickSentinel(rd.sentinelMaster, rd.find(rd.sentinelMaster))
	case v1alpha1.RedisModeCluster:
		p = pickCluster(rd.shards, rd.slot, rd.key != "", rd.find)
	case v1alpha1.RedisModeRedlock:
		p = pickRedlock(rd.endpoints)
	}
	rd.master, rd.masterAddr, rd.masters = p.master, p.addr, p.masters
	rd.masterReason, rd.masterMessage = p.reason, p.message
}

// masterPick is what pickMaster found: the master that takes the lock's
// writes, status.master, every server that takes writes, or why there is
// no master.
type masterPick struct {
	master          *endpoint
	addr            string
	masters         []*endpoint
	reason, message string
}

// single is the pick of master m alone, or of none (addr kept) when m is nil.
func single(m *endpoint, addr string) masterPick {
	if m == nil {
		return masterPick{addr: addr}
	}
	return masterPick{master: m, addr: m.addr, masters: []*endpoint{m}}
}

// pickStandalone: the one server, if it answers as a master.
func pickStandalone(e *endpoint) masterPick {
	switch {
	case !e.reachable():
		p := single(nil, e.addr)
		p.reason, p.message = unreachableReason(e)
		return p
	case e.info.Role != redisprobe.RoleMaster:
		p := single(nil, e.addr)
		p.reason = v1alpha1.ReasonMasterUnknown
		p.message = fmt.Sprintf("%s is a %s, not a master: Standalone mode needs a server that takes writes (for a master with replicas use Replicated mode)", e.addr, roleWord(e))
		return p
	}
	return single(e, e.addr)
}

// pickReplicated: the one server (by run_id) that answers as a master.
func pickReplicated(eps []*endpoint) masterPick {
	var masters []*endpoint
	runIDs := map[string]bool{}
	for _, e := range eps {
		if e.isMaster() && !runIDs[e.info.RunID] {
			runIDs[e.info.RunID] = true
			masters = append(masters, e)
		}
	}
	p := single(nil, "")
	switch len(masters) {
	case 1:
		return single(masters[0], "")
	case 0:
		if reason, msg, ok := unreachableSummary(eps, "server"); ok {
			p.reason, p.message = reason, msg
		} else {
			p.reason, p.message = v1alpha1.ReasonMasterUnknown, "no reachable server is a master"
		}
	default:
		var addrs []string
		for _, m := range masters {
			addrs = append(addrs, m.addr)
		}
		p.reason = v1alpha1.ReasonMasterUnknown
		p.message = fmt.Sprintf("%d servers claim to be master (%s): locks on either could be lost", len(masters), listAddrs(addrs))
	}
	return p
}

// pickSentinel: the master the Sentinels name (addr; e is its probe, nil
// when the Sentinels named none), if it answers as a master.
func pickSentinel(addr string, e *endpoint) masterPick {
	p := single(nil, addr)
	switch {
	case e == nil:
		p.reason, p.message = v1alpha1.ReasonMasterUnknown, "the Sentinels named no master"
	case !e.reachable():
		p.reason, p.message = unreachableReason(e)
		p.message = "the master the Sentinels name: " + p.message
	case e.info.Role != redisprobe.RoleMaster:
		p.reason = v1alpha1.ReasonMasterUnknown
		p.message = fmt.Sprintf("the Sentinels name %s, which reports role %s (a failover in progress?)", e.addr, roleWord(e))
	default:
		return single(e, addr)
	}
	return p
}

// pickCluster: every shard's master, each of which must answer as a
// healthy master, and the one serving the key's slot (-1: unknown). find
// returns the probe of an address.
func pickCluster(shards []redisprobe.Shard, slot int, keyed bool, find func(string) *endpoint) masterPick {
	var (
		p        masterPick
		problems []string
		reason   string
	)
	for _, sh := range shards {
		e := find(sh.Master)
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
			p.masters = append(p.masters, e)
			if slot >= 0 && sh.Serves(slot) {
				p.master, p.addr = e, e.addr
			}
		}
	}
	if len(problems) == 0 && p.master == nil && keyed {
		reason = v1alpha1.ReasonMasterUnknown
		if slot < 0 {
			problems = append(problems, "CLUSTER KEYSLOT failed: the key's master is unknown")
		} else {
			problems = append(problems, fmt.Sprintf("no master serves the key's slot %d", slot))
		}
	}
	if len(problems) > 0 {
		p.reason, p.message = reason, joinList(problems)
	}
	return p
}

// pickRedlock: every node that answers as a master; Redlock has no one
// master.
func pickRedlock(eps []*endpoint) masterPick {
	var p masterPick
	for _, e := range eps {
		if e.isMaster() {
			p.masters = append(p.masters, e)
		}
	}
	return p
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
	switch {
	case errors.Is(e.err, redisprobe.ErrAddressNotAllowed):
		return v1alpha1.ReasonAddressNotAllowed, fmt.Sprintf("%s is outside the networks this controller may connect to (--allowed-redis-cidrs)", e.addr)
	case redisprobe.IsAuthError(e.err):
		return v1alpha1.ReasonAuthFailed, fmt.Sprintf("%s refused the credentials: %s", e.addr, redisprobe.StatusText(e.err))
	}
	return v1alpha1.ReasonEndpointUnreachable, fmt.Sprintf("%s is unreachable: %s", e.addr, redisprobe.StatusText(e.err))
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

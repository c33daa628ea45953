package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// defaultMaxLagSeconds is min-replicas-max-lag when a resource that never
// went through the API server (whose schema defaults it) leaves it unset.
const defaultMaxLagSeconds = 10

// wantedGuard is the replica guard a store (or inline lock) asks for, the
// replicas its lock waits for (0 for a store: waitForReplicas is per
// lock), and whether the controller may apply the guard.
func wantedGuard(s *v1alpha1.SafetySpec) (want redisprobe.ReplicaSettings, waitFor int, manage bool) {
	if s == nil {
		return redisprobe.ReplicaSettings{}, 0, false
	}
	want.MinReplicasToWrite = int(s.MinReplicasToWrite)
	want.MinReplicasMaxLag = defaultMaxLagSeconds
	if s.MinReplicasMaxLag != nil {
		want.MinReplicasMaxLag = int(s.MinReplicasMaxLag.Seconds())
	}
	return want, int(s.WaitForReplicas), s.ManageReplicaSettings && want.MinReplicasToWrite > 0
}

// guardReplicas checks (and with manageReplicaSettings applies, verifies
// and repairs) min-replicas-to-write/min-replicas-max-lag on every master,
// and that enough replicas are connected for the guard and for
// waitForReplicas. The result is ReplicationGuarded.
func (r *DistributedLockReconciler) guardReplicas(ctx context.Context, rd *round) {
	nn := rd.store.requester()
	want, waitFor, manage := wantedGuard(rd.store.safety)
	if want.MinReplicasToWrite == 0 && waitFor == 0 {
		r.guards.drop(nn)
		rd.guard = result(metav1.ConditionTrue, v1alpha1.ReasonNotRequested, "no replica guard requested (spec.safety.minReplicasToWrite and waitForReplicas are 0)")
		return
	}
	if len(rd.masters) == 0 || rd.masterReason != "" {
		// The masters are what the guard is about; pickMaster said why
		// they are missing, and Ready reports it.
		rd.guard = result(metav1.ConditionUnknown, firstNonEmpty(rd.masterReason, v1alpha1.ReasonMasterUnknown), "the replica guard cannot be checked: "+firstNonEmpty(rd.masterMessage, "no master"))
		if !manage {
			r.guards.drop(nn)
		}
		return
	}
	if manage {
		// A server is known by the run_id it reports through these
		// credentials: a server that claims another's run_id reaches only
		// requests made with the same credentials, so forging one needs
		// the victim's password.
		fp := rd.creds.servers.Fingerprint()
		var servers []guardServer
		for _, m := range rd.masters {
			servers = append(servers, guardServer{creds: fp, runID: m.info.RunID})
		}
		r.guards.set(nn, guardWish{settings: want, servers: servers, store: rd.store.isStore()})
	} else {
		r.guards.drop(nn)
	}

	var v guardVerdict
	for _, m := range rd.masters {
		r.guardMaster(ctx, rd, m, want, waitFor, manage, &v)
	}
	rd.guard = v.result(want, waitFor, masterList(rd.masters))
}

// guardMaster checks the guard on one master m, applying it first when
// manage is set, and that enough of m's replicas are connected; it records
// what falls short in v.
func (r *DistributedLockReconciler) guardMaster(ctx context.Context, rd *round, m *endpoint, want redisprobe.ReplicaSettings, waitFor int, manage bool, v *guardVerdict) {
	inForce := redisprobe.ReplicaSettings{}
	if want.MinReplicasToWrite > 0 {
		var ok bool
		if inForce, ok = r.guardInForce(ctx, rd, m, want, manage, v); !ok {
			return
		}
	}
	need, lag := replicasNeeded(want, waitFor, inForce)
	if good := goodReplicas(m, lag); good < need {
		v.fail(v1alpha1.ReasonReplicasInsufficient, fmt.Sprintf("%s has %d replica(s) online within %ds of lag, %d needed: writes (and acquires) fail", m.addr, good, lag, need))
	}
}

// guardInForce returns the replica settings in force on m once they are
// checked (and, with manage, applied to the strictest that any lock wants
// of m). It returns false, having recorded why in v, when they cannot be
// read or applied, or are weaker than want.
func (r *DistributedLockReconciler) guardInForce(ctx context.Context, rd *round, m *endpoint, want redisprobe.ReplicaSettings, manage bool, v *guardVerdict) (redisprobe.ReplicaSettings, bool) {
	nn := rd.store.requester()
	cfg, err := readConfig(ctx, m)
	if err != nil {
		v.fail(configFailure(m, err))
		return redisprobe.ReplicaSettings{}, false
	}
	inForce := cfg.Replica
	if manage {
		srv := guardServer{creds: rd.creds.servers.Fingerprint(), runID: m.info.RunID}
		d := r.guards.effective(srv, nn)
		if d.others > 0 {
			v.conflicts = append(v.conflicts, conflictNote(m.addr, d))
		}
		if d.deferred {
			// A store manages this server: its settings win, and this
			// inline lock leaves them alone (it reports the conflict).
			return inForce, inForce.AtLeast(want) || v.deferTo(m.addr, d.settings, want)
		}
		eff := d.settings
		if inForce != eff {
			applied, err := r.applyGuard(ctx, rd, m, inForce, eff)
			if err != nil {
				v.fail(configFailure(m, err))
				return inForce, false
			}
			inForce = applied
		}
		r.guardReplicasOf(ctx, rd, m, inForce)
	}
	if !inForce.AtLeast(want) {
		msg := fmt.Sprintf("%s has %s, weaker than the requested %s", m.addr, inForce, want)
		if !manage {
			msg += " (spec.safety.manageReplicaSettings is false: set it, or configure the server)"
		}
		v.fail(v1alpha1.ReasonGuardMissing, msg)
		return inForce, false
	}
	return inForce, true
}

// replicasNeeded is how many replicas a master needs online, and within
// how many seconds of lag: enough for waitForReplicas and the requested
// guard, and for the guard in force when Redis enforces it (whose lag is
// then the one Redis counts with).
func replicasNeeded(want redisprobe.ReplicaSettings, waitFor int, inForce redisprobe.ReplicaSettings) (need, lag int) {
	need = max(waitFor, want.MinReplicasToWrite)
	lag = want.MinReplicasMaxLag
	if inForce.Enforced() {
		need = max(need, inForce.MinReplicasToWrite)
		lag = inForce.MinReplicasMaxLag
	}
	return need, lag
}

// guardVerdict collects what guardMaster found on each master.
type guardVerdict struct {
	// failReason is the most important reason among failures (guardRank).
	failReason string
	failures   []string
	// conflicts are masters where other locks want different settings.
	conflicts []string
}

// fail records a master that falls short, for reason.
func (v *guardVerdict) fail(reason, msg string) {
	// ConfigUnavailable first, then GuardMissing, then ReplicasInsufficient.
	if v.failReason == "" || guardRank(reason) < guardRank(v.failReason) {
		v.failReason = reason
	}
	v.failures = append(v.failures, msg)
}

// deferTo records that a store's settings on addr are weaker than this
// inline lock wants; the lock may not change them. It returns false.
func (v *guardVerdict) deferTo(addr string, store, want redisprobe.ReplicaSettings) bool {
	v.fail(v1alpha1.ReasonGuardMissing, fmt.Sprintf("%s: a store manages this server's replica settings (%s), weaker than the requested %s; ask the store's owner", addr, store, want))
	return false
}

// result is ReplicationGuarded: False with the failures, else True with the
// conflicts, else True with what is in force on masters.
func (v *guardVerdict) result(want redisprobe.ReplicaSettings, waitFor int, masters string) conditionResult {
	switch {
	case v.failReason != "":
		return result(metav1.ConditionFalse, v.failReason, joinList(v.failures))
	case len(v.conflicts) > 0:
		return result(metav1.ConditionTrue, v1alpha1.ReasonSettingsConflict, "the guard is in force, stricter than requested: "+joinList(v.conflicts))
	case want.MinReplicasToWrite == 0:
		return result(metav1.ConditionTrue, v1alpha1.ReasonGuardApplied, fmt.Sprintf("%d replica(s) connected for waitForReplicas on %s", waitFor, masters))
	}
	return result(metav1.ConditionTrue, v1alpha1.ReasonGuardApplied, fmt.Sprintf("%s in force on %s", want, masters))
}

// applyGuard sets eff on m, then verifies it with CONFIG GET, and returns
// the settings in force. It never lowers a setting this controller did not
// set itself (an operator's stricter value stays: eff is raised to it), nor
// one it did set before every lock has been reconciled once since it
// started (another lock could want the stricter value).
func (r *DistributedLockReconciler) applyGuard(ctx context.Context, rd *round, m *endpoint, cur, eff redisprobe.ReplicaSettings) (redisprobe.ReplicaSettings, error) {
	log := logf.FromContext(ctx)
	srv := guardServer{creds: rd.creds.servers.Fingerprint(), runID: m.info.RunID}
	if cur.Enforced() && !r.guards.appliedHere(srv, cur) {
		eff = eff.Stricter(cur) // a guard someone else set: only ever raised
	}
	if eff == cur {
		return cur, nil
	}
	if cur.AtLeast(eff) && !r.mayLoosen(ctx) {
		log.V(1).Info("leaving stricter replica settings until every lock was seen", "server", m.addr, "current", cur.String(), "wanted", eff.String())
		return cur, nil
	}
	if err := redisprobe.ApplyReplicaSettings(ctx, m.client, eff); err != nil {
		return cur, err
	}
	cfg, err := redisprobe.ReadConfig(ctx, m.client)
	if err != nil {
		return cur, err
	}
	m.config = cfg
	if cfg.Replica != eff {
		return cfg.Replica, fmt.Errorf("%w: CONFIG SET %s did not stick: CONFIG GET reads %s", redisprobe.ErrConfigUnavailable, eff, cfg.Replica)
	}
	r.guards.recordApplied(srv, eff)
	replicaSettingsApplied.Inc()
	log.Info("applied replica settings", "server", m.addr, "was", cur.String(), "now", eff.String())
	r.recorder.Eventf(rd.store.owner, nil, corev1.EventTypeNormal, v1alpha1.ReasonGuardApplied, "ApplyReplicaSettings",
		"set %s on %s (was %s)", eff, m.addr, cur)
	return cfg.Replica, nil
}

// mayLoosen reports whether every requester (inline lock and store) in the
// cache has been reconciled since the controller started, so the registry
// knows every wish.
func (r *DistributedLockReconciler) mayLoosen(ctx context.Context) bool {
	var locks v1alpha1.DistributedLockList
	var stores v1alpha1.LockStoreList
	var cluster v1alpha1.ClusterLockStoreList
	if r.kube.List(ctx, &locks) != nil || r.kube.List(ctx, &stores) != nil || r.kube.List(ctx, &cluster) != nil {
		return false
	}
	var all []string
	for i := range locks.Items {
		if locks.Items[i].Spec.Inline() {
			all = append(all, inlineStore(&locks.Items[i]).requester())
		}
	}
	for i := range stores.Items {
		all = append(all, lockStoreSpec(&stores.Items[i]).requester())
	}
	for i := range cluster.Items {
		all = append(all, clusterStoreSpec(&cluster.Items[i]).requester())
	}
	return r.guards.allSeen(all)
}

// readConfig reads m's CONFIG once per round.
func readConfig(ctx context.Context, m *endpoint) (redisprobe.ServerConfig, error) {
	if !m.configRead {
		m.config, m.configErr = redisprobe.ReadConfig(ctx, m.client)
		m.configRead = true
	}
	return m.config, m.configErr
}

// configWhatToDo is what a user can do about a guard CONFIG refuses: on
// a managed service, which forbids CONFIG, only the first.
const configWhatToDo = "set spec.safety.minReplicasToWrite to 0 (waitForReplicas needs no CONFIG), or allow CONFIG GET (and CONFIG SET with manageReplicaSettings) for the controller's user"

func configFailure(m *endpoint, err error) (string, string) {
	if errors.Is(err, redisprobe.ErrConfigUnavailable) || redisprobe.IsConfigUnavailable(err) {
		return v1alpha1.ReasonConfigUnavailable, fmt.Sprintf("%s: CONFIG is disabled, renamed or denied (%s): the replica guard cannot be read or applied; %s", m.addr, redisprobe.StatusText(err), configWhatToDo)
	}
	return v1alpha1.ReasonConfigUnavailable, fmt.Sprintf("%s: reading or applying the replica guard failed: %s", m.addr, redisprobe.StatusText(err))
}

func guardRank(reason string) int {
	switch reason {
	case v1alpha1.ReasonConfigUnavailable:
		return 0
	case v1alpha1.ReasonGuardMissing:
		return 1
	default:
		return 2
	}
}

// goodReplicas counts m's replicas that are online with at most lag
// seconds of lag, as Redis counts them for min-replicas-to-write.
func goodReplicas(m *endpoint, lag int) int {
	n := 0
	for _, r := range m.info.Replicas {
		if r.Online && r.Lag <= lag {
			n++
		}
	}
	return n
}

func masterList(ms []*endpoint) string {
	var a []string
	for _, m := range ms {
		a = append(a, m.addr)
	}
	return listAddrs(a)
}

// guardRegistry is the controller's memory of which requesters (stores and
// inline locks) want which replica settings on which servers. A server is
// the pair (credentials, run_id seen through them): two addresses of one
// server are one server, and requests merge only between requesters that
// reach the server with the same credentials, so a lock can never make the
// controller change a server with anybody else's credentials. Settings are
// server-wide: among requesters that merge the strictest wish applies, and
// a store's wish wins over inline locks' on the same server (same
// credentials, same run_id).
type guardRegistry struct {
	mu    sync.Mutex
	wants map[string]guardWish
	seen  map[string]bool
	// applied is what this controller process last set on each server:
	// the only settings it may lower.
	applied map[guardServer]redisprobe.ReplicaSettings
}

// guardServer is one server as one set of credentials sees it.
type guardServer struct {
	creds string // redisprobe.Fingerprint of the credentials used
	runID string
}

type guardWish struct {
	settings redisprobe.ReplicaSettings
	servers  []guardServer
	// store is true for a LockStore or ClusterLockStore.
	store bool
}

func newGuardRegistry() *guardRegistry {
	return &guardRegistry{wants: map[string]guardWish{}, seen: map[string]bool{}, applied: map[guardServer]redisprobe.ReplicaSettings{}}
}

func (g *guardRegistry) set(requester string, w guardWish) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.servers = slices.Clone(w.servers)
	g.wants[requester] = w
}

func (g *guardRegistry) drop(requester string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wants, requester)
}

// forget drops everything about a deleted requester.
func (g *guardRegistry) forget(requester string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wants, requester)
	delete(g.seen, requester)
}

// guardDecision is what a requester should apply to one server.
type guardDecision struct {
	// settings to apply: the strictest among the requesters self merges
	// with, or, when deferred, the store's.
	settings redisprobe.ReplicaSettings
	// deferred is true for an inline lock on a server a store manages.
	deferred bool
	// others counts requesters on the same server (same credentials and
	// run_id) that want different settings (they are not named: they may
	// be other namespaces').
	others int
}

// effective decides what self applies to srv. Only requesters that reach
// srv with the same credentials (and see the same run_id through them)
// have a say: requests merge between those of the same class (stores, or
// inline locks), and an inline lock defers to a store among them. A
// run_id alone is what any server can claim: a requester on a server that
// forges it must neither change, hold back nor raise a conflict on others'.
func (g *guardRegistry) effective(srv guardServer, self string) guardDecision {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine := g.wants[self]
	d := guardDecision{settings: mine.settings}
	var storeWish *redisprobe.ReplicaSettings
	for name, w := range g.wants {
		if name == self {
			continue
		}
		if !slices.Contains(w.servers, srv) {
			continue
		}
		if w.settings != mine.settings {
			d.others++
		}
		switch {
		case w.store && !mine.store:
			st := w.settings
			if storeWish != nil {
				st = storeWish.Stricter(st)
			}
			storeWish = &st
		case w.store == mine.store:
			d.settings = d.settings.Stricter(w.settings)
		}
	}
	if storeWish != nil {
		d.settings, d.deferred = *storeWish, true
	}
	return d
}

// conflictNote says on addr that other requesters want different settings.
func conflictNote(addr string, d guardDecision) string {
	if d.deferred {
		return fmt.Sprintf("%s: a store manages this server's replica settings and they win over this lock's; %s applies", addr, d.settings)
	}
	return fmt.Sprintf("%s: %d other requester(s) ask for different settings; the stricter %s applies", addr, d.others, d.settings)
}

func (g *guardRegistry) markSeen(requester string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[requester] = true
}

func (g *guardRegistry) allSeen(all []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range all {
		if !g.seen[r] {
			return false
		}
	}
	return true
}

// appliedHere reports whether s is what this controller last set on srv.
func (g *guardRegistry) appliedHere(srv guardServer, s redisprobe.ReplicaSettings) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.applied[srv]
	return ok && a == s
}

func (g *guardRegistry) recordApplied(srv guardServer, s redisprobe.ReplicaSettings) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applied[srv] = s
}

// guardReplicasOf sets the master m's settings on its replicas that the
// round reached (those sharing its replication ID), so that a replica
// promoted by a failover enforces the guard from its first write, before
// the next reconcile finds it master. A replica's stricter settings that
// this controller did not set stay. Failures are logged: the master's
// guard, which is what holds now, is unaffected.
func (r *DistributedLockReconciler) guardReplicasOf(ctx context.Context, rd *round, m *endpoint, inForce redisprobe.ReplicaSettings) {
	if !inForce.Enforced() {
		return
	}
	log := logf.FromContext(ctx)
	for _, e := range rd.endpoints {
		if e == m || !e.reachable() || e.info.Role != redisprobe.RoleReplica || e.info.ReplID != m.info.ReplID {
			continue
		}
		cfg, err := readConfig(ctx, e)
		if err != nil {
			log.V(1).Info("cannot read a replica's settings", "replica", e.addr, "error", redisprobe.StatusText(err))
			continue
		}
		srv := guardServer{creds: rd.creds.servers.Fingerprint(), runID: e.info.RunID}
		want := inForce
		if cfg.Replica.Enforced() && !r.guards.appliedHere(srv, cfg.Replica) {
			want = want.Stricter(cfg.Replica)
		}
		if cfg.Replica == want {
			continue
		}
		if err := redisprobe.ApplyReplicaSettings(ctx, e.client, want); err != nil {
			log.V(1).Info("cannot guard a replica", "replica", e.addr, "error", redisprobe.StatusText(err))
			continue
		}
		e.config.Replica = want
		r.guards.recordApplied(srv, want)
		log.Info("applied replica settings to a replica", "replica", e.addr, "master", m.addr, "now", want.String())
	}
}

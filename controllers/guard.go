package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// defaultMaxLagSeconds is min-replicas-max-lag when a resource that never
// went through the API server (whose schema defaults it) leaves it unset.
const defaultMaxLagSeconds = 10

// wantedGuard is the replica guard a lock asks for, and whether the
// controller may apply it.
func wantedGuard(dl *v1alpha1.DistributedLock) (want redisprobe.ReplicaSettings, waitFor int, manage bool) {
	s := dl.Spec.Safety
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
	nn := types.NamespacedName{Namespace: rd.dl.Namespace, Name: rd.dl.Name}
	want, waitFor, manage := wantedGuard(rd.dl)
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
		var ids []string
		for _, m := range rd.masters {
			ids = append(ids, m.info.RunID)
		}
		r.guards.set(nn, want, ids)
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
	cfg, err := readConfig(ctx, m)
	if err != nil {
		v.fail(configFailure(m, err))
		return redisprobe.ReplicaSettings{}, false
	}
	inForce := cfg.Replica
	if manage {
		eff, others := r.guards.effective(m.info.RunID, types.NamespacedName{Namespace: rd.dl.Namespace, Name: rd.dl.Name})
		if len(others) > 0 {
			v.conflicts = append(v.conflicts, fmt.Sprintf("%s: other locks ask for different settings (%s); the stricter %s applies", m.addr, strings.Join(others, ", "), eff))
		}
		if inForce != eff {
			applied, err := r.applyGuard(ctx, rd, m, inForce, eff)
			if err != nil {
				v.fail(configFailure(m, err))
				return inForce, false
			}
			inForce = applied
		}
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

// applyGuard sets eff on m unless that would loosen the server's settings
// before every lock has been reconciled once since the controller started
// (another lock could want the stricter value), then verifies it with
// CONFIG GET. It returns the settings in force.
func (r *DistributedLockReconciler) applyGuard(ctx context.Context, rd *round, m *endpoint, cur, eff redisprobe.ReplicaSettings) (redisprobe.ReplicaSettings, error) {
	log := logf.FromContext(ctx)
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
	replicaSettingsApplied.Inc()
	log.Info("applied replica settings", "server", m.addr, "was", cur.String(), "now", eff.String())
	r.recorder.Eventf(rd.dl, nil, corev1.EventTypeNormal, v1alpha1.ReasonGuardApplied, "ApplyReplicaSettings",
		"set %s on %s (was %s)", eff, m.addr, cur)
	return cfg.Replica, nil
}

// mayLoosen reports whether every DistributedLock in the cache has been
// reconciled since the controller started, so the registry knows every
// lock's wishes.
func (r *DistributedLockReconciler) mayLoosen(ctx context.Context) bool {
	var list v1alpha1.DistributedLockList
	if err := r.kube.List(ctx, &list); err != nil {
		return false
	}
	var all []types.NamespacedName
	for _, dl := range list.Items {
		all = append(all, types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name})
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

func configFailure(m *endpoint, err error) (string, string) {
	if errors.Is(err, redisprobe.ErrConfigUnavailable) || redisprobe.IsConfigUnavailable(err) {
		return v1alpha1.ReasonConfigUnavailable, fmt.Sprintf("%s: CONFIG is disabled, renamed or denied (%s): the replica guard cannot be read or applied", m.addr, errorText(err))
	}
	return v1alpha1.ReasonConfigUnavailable, fmt.Sprintf("%s: reading or applying the replica guard failed: %s", m.addr, errorText(err))
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

// guardRegistry is the controller's memory of which locks want which
// replica settings on which servers (by run_id, so two addresses of one
// server are one server). Settings are server-wide, so the strictest wish
// applies and disagreeing locks report SettingsConflict.
type guardRegistry struct {
	mu    sync.Mutex
	wants map[types.NamespacedName]guardWish
	seen  map[types.NamespacedName]bool
}

type guardWish struct {
	settings redisprobe.ReplicaSettings
	servers  []string // run_ids
}

func newGuardRegistry() *guardRegistry {
	return &guardRegistry{wants: map[types.NamespacedName]guardWish{}, seen: map[types.NamespacedName]bool{}}
}

func (g *guardRegistry) set(nn types.NamespacedName, s redisprobe.ReplicaSettings, runIDs []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wants[nn] = guardWish{settings: s, servers: slices.Clone(runIDs)}
}

func (g *guardRegistry) drop(nn types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wants, nn)
}

// forget drops everything about a deleted lock.
func (g *guardRegistry) forget(nn types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wants, nn)
	delete(g.seen, nn)
}

// effective returns the strictest settings wished for server runID, and
// the other locks that wish something different from self.
func (g *guardRegistry) effective(runID string, self types.NamespacedName) (redisprobe.ReplicaSettings, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine := g.wants[self].settings
	eff := mine
	var others []string
	for nn, w := range g.wants {
		if !slices.Contains(w.servers, runID) {
			continue
		}
		eff = eff.Stricter(w.settings)
		if nn != self && w.settings != mine {
			others = append(others, nn.String())
		}
	}
	slices.Sort(others)
	return eff, others
}

func (g *guardRegistry) markSeen(nn types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[nn] = true
}

func (g *guardRegistry) allSeen(all []types.NamespacedName) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, nn := range all {
		if !g.seen[nn] {
			return false
		}
	}
	return true
}

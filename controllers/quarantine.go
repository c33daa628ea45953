/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisprobe"
)

// cutoffSlack is how long past min-replicas-max-lag a Redis master cut off
// from its replicas may go on accepting writes: it counts a replica's lag
// in whole seconds (an acknowledgement stays fresh up to 1 s past the
// lag), and it recounts its good replicas only once a second (up to 1 s
// later still). test/chaos TestQuarantineSplitBrainUntilMinReplicasMaxLag
// measured 2.87 s with a lag of 1 s, and two holders with a slack of 1 s.
const cutoffSlack = 2 * time.Second

// quarantineRound is what a round found about a lock's failover
// quarantine (spec.safety.failoverQuarantine).
type quarantineRound struct {
	// cond is FailoverQuarantine; unset when the round did not get to it.
	cond conditionResult
	// status is status.failoverQuarantine; nil keeps the previous one.
	status *v1alpha1.FailoverQuarantineStatus
	// read is true when the epoch record was read this round: left and
	// until are current.
	read  bool
	left  time.Duration
	until *metav1.Time
}

// observeQuarantine checks that the quarantine's bound holds for the
// lock's master (store is the status of the lock's store, nil for an
// inline lock), then writes or checks the key's epoch record there, as
// the pods' scripts do: the first write is remembered in
// status.failoverQuarantine.epochRecorded, and from then on a missing
// record reads as lost (a quarantine), not as a new key's.
func (r *DistributedLockReconciler) observeQuarantine(ctx context.Context, rd *round, store *v1alpha1.LockStoreStatus) {
	if !rd.dl.Spec.FailoverQuarantine() {
		return
	}
	q := &rd.quarantine
	cutoff, unsound := quarantineBound(rd, store)
	q.status = &v1alpha1.FailoverQuarantineStatus{Cutoff: metav1.Duration{Duration: cutoff}}
	if prev := rd.dl.Status.FailoverQuarantine; prev != nil && rd.dl.Status.Key == rd.key {
		q.status.EpochRecorded = prev.EpochRecorded
	}
	if unsound != "" {
		q.cond = result(metav1.ConditionFalse, v1alpha1.ReasonQuarantineUnsound, unsound)
	}
	if rd.master == nil || rd.master.client == nil {
		if !q.cond.set {
			q.cond = result(metav1.ConditionUnknown, v1alpha1.ReasonEpochUnrecorded, "the key's epoch record cannot be checked: its master is unknown")
		}
		return
	}
	quarantine := protocol.Quarantine{On: true, Cutoff: cutoff, MissingWaits: q.status.EpochRecorded != nil}
	var es protocol.EpochState
	err := redisprobe.Recover(ctx, func() (err error) {
		es, err = protocol.RecordEpoch(ctx, protocol.Scripts(rd.master.client), rd.key, rd.dl.Spec.TTLOrDefault(), quarantine)
		return err
	})
	if err != nil {
		logf.FromContext(ctx).V(1).Info("cannot record the key's epoch", "server", rd.master.addr, "error", err.Error())
		if !q.cond.set {
			q.cond = result(metav1.ConditionUnknown, v1alpha1.ReasonEpochUnrecorded, fmt.Sprintf("%s: %s", rd.master.addr, redisprobe.StatusText(err)))
		}
		return
	}
	q.read, q.left = true, es.QuarantineLeft
	if q.status.EpochRecorded == nil {
		q.status.EpochRecorded = &metav1.Time{Time: rd.now}
	}
	if q.left > 0 {
		q.until = quarantineEnd(r.now().Add(q.left), rd.dl.Status.QuarantinedUntil)
	}
	switch {
	case q.cond.set: // unsound
	case q.left > 0:
		q.cond = result(metav1.ConditionTrue, v1alpha1.ReasonQuarantined, fmt.Sprintf("the key's server %s changed (a failover, a restart that may have lost writes, or its epoch record was lost): nothing is granted until %s, when every lease the old server granted has ended", rd.master.addr, q.until.UTC().Format(time.RFC3339)))
	default:
		q.cond = result(metav1.ConditionTrue, v1alpha1.ReasonEpochRecorded, fmt.Sprintf("the key's epoch record names %s; a failover or a restart there holds grants back for the longest TTL plus %v plus 2 %%", rd.master.addr, cutoff))
	}
}

// quarantineEnd is status.quarantinedUntil for a quarantine that ends at
// end on the controller's clock: rounded up to the second (status keeps
// seconds), and prev when that is a little later, so that reconciles that
// read the same end through different round trips do not rewrite it.
func quarantineEnd(end time.Time, prev *metav1.Time) *metav1.Time {
	up := end.Truncate(time.Second)
	if up.Before(end) {
		up = up.Add(time.Second)
	}
	if prev != nil && prev.After(up) && prev.Sub(up) <= 2*time.Second {
		up = prev.Time
	}
	return &metav1.Time{Time: up}
}

// quarantineBound is the quarantine's cutoff (how long a master cut off
// from its replicas may still accept writes) for the lock's master, and,
// when the bound does not hold there, why not. store is the status of the
// lock's store (nil for an inline lock), whose replica guard then counts.
func quarantineBound(rd *round, store *v1alpha1.LockStoreStatus) (time.Duration, string) {
	switch rd.store.redis.Mode {
	case v1alpha1.RedisModeStandalone:
		return 0, "" // its only change of epoch is a restart
	case v1alpha1.RedisModeRedlock:
		return 0, fmt.Sprintf("%s is Redlock, whose independent nodes have no failover for a quarantine to wait out: turn spec.safety.failoverQuarantine off", rd.store.requester())
	}
	want, _, manage := wantedGuard(rd.store.safety)
	lag := want.MinReplicasMaxLag
	if lag == 0 { // no safety at all: what a guard would default to
		lag = defaultMaxLagSeconds
	}
	cutoff := time.Duration(lag)*time.Second + cutoffSlack
	whose := "spec.safety"
	if store != nil {
		whose = "the spec.safety of " + rd.store.requester()
	}
	if !manage {
		return cutoff, fmt.Sprintf("the replica guard is not managed (%s needs manageReplicaSettings and minReplicasToWrite equal to the number of replicas): a master cut off from its replicas may go on granting", whose)
	}
	replicas, toWrite := replicaCount(rd, store), want.MinReplicasToWrite
	if rd.master != nil && rd.master.configRead && rd.master.configErr == nil {
		toWrite = max(toWrite, rd.master.config.Replica.MinReplicasToWrite)
	}
	if replicas > toWrite {
		return cutoff, fmt.Sprintf("%s has %d replica(s) and min-replicas-to-write %d: when one is promoted, an old master cut off with %d of the others goes on granting for as long as the partition lasts; set minReplicasToWrite to %d in %s, or turn the quarantine off", rd.masterAddr, replicas, toWrite, toWrite, replicas, whose)
	}
	return cutoff, ""
}

// replicaCount is how many replicas the lock's master has: those it lists
// (an inline lock's probe), or the connected replicas its store's status
// counts.
func replicaCount(rd *round, store *v1alpha1.LockStoreStatus) int {
	if store == nil {
		if rd.master == nil {
			return 0
		}
		return len(rd.master.info.Replicas)
	}
	for _, e := range store.Endpoints {
		if e.Address == rd.masterAddr && e.ConnectedReplicas != nil {
			return int(*e.ConnectedReplicas)
		}
	}
	return 0
}

// setQuarantineStatus writes the round's quarantine into the lock's status:
// status.failoverQuarantine, status.quarantinedUntil and the
// FailoverQuarantine condition, all absent when the lock does not ask for
// the quarantine. A round that did not read the epoch record keeps the
// previous quarantinedUntil until it has passed.
func setQuarantineStatus(rd *round, st *v1alpha1.DistributedLockStatus, generation int64) {
	if !rd.dl.Spec.FailoverQuarantine() {
		st.FailoverQuarantine, st.QuarantinedUntil = nil, nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionFailoverQuarantine)
		return
	}
	q := &rd.quarantine
	if q.status != nil {
		st.FailoverQuarantine = q.status
	}
	switch {
	case q.read:
		st.QuarantinedUntil = q.until
	case st.QuarantinedUntil != nil && !rd.now.Before(st.QuarantinedUntil.Time):
		st.QuarantinedUntil = nil
	}
	c := q.cond
	if !c.set {
		c = result(metav1.ConditionUnknown, firstNonEmpty(rd.failReason, v1alpha1.ReasonReconciling), "not checked: "+firstNonEmpty(rd.failMessage, "the key's master was not reached"))
	}
	setCondition(&st.Conditions, rd, generation, v1alpha1.ConditionFailoverQuarantine, c)
}

// unsound reports a FailoverQuarantine condition that holds back Ready.
func (q *quarantineRound) unsound() bool {
	return q.cond.set && q.cond.reason == v1alpha1.ReasonQuarantineUnsound
}

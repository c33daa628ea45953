package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Controller metrics, registered with controller-runtime's registry (served
// on the manager's metrics endpoint next to controller_runtime_*). Labels
// are bounded: no per-server labels; the per-lock gauges below have one
// series per DistributedLock (namespace, name), like cert-manager's
// certificate metrics, deleted with the lock.
var (
	probesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redlease_controller_endpoint_probes_total",
		Help: "Redis endpoint probes (PING+INFO) by result: reachable, unreachable, auth_failed.",
	}, []string{"result"})
	locksGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_controller_locks",
		Help: "DistributedLocks known to this controller, by Ready condition (true, false).",
	}, []string{"ready"})
	fenceFloorRaised = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "redlease_controller_fence_floor_raised_total",
		Help: "Fence counters found below their lock's fenceHighWater and raised.",
	})
	replicaSettingsApplied = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "redlease_controller_replica_settings_applied_total",
		Help: "CONFIG SET of min-replicas-to-write/min-replicas-max-lag on a master (first apply or drift repaired).",
	})
	holderReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redlease_controller_holder_reads_total",
		Help: "Lock keys read by lock reconciles, by source: batch (the store's pipelined read of all its locks) or direct (a round trip of the lock's own: inline locks, or no recent batch).",
	}, []string{"source"})
	lockLabels = []string{"namespace", "name"}
	lockReady  = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_controller_lock_ready",
		Help: "1 when the DistributedLock's Ready condition is True, else 0.",
	}, lockLabels)
	lockHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_controller_lock_held",
		Help: "1 when the controller last saw the DistributedLock's key held, else 0.",
	}, lockLabels)
	lockFenceHighWater = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_controller_lock_fence_high_water",
		Help: "The highest fencing token the controller has seen for the DistributedLock's key (status.fenceHighWater).",
	}, lockLabels)
	lockHolderSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_controller_lock_holder_since_timestamp_seconds",
		Help: "When the controller first saw the current holder (status.holder.since), as a Unix time; 0 when the key is free. time() minus it is how long the holder has held.",
	}, lockLabels)
	// lockWaiters is named for the lock, not the controller (DESIGN §11):
	// it says what waits in Redis, whoever reads it.
	lockWaiters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redlease_lock_waiters",
		Help: "How many wait in the DistributedLock's waiting line in Redis (status.waiting.count), as the controller last read it; no series while the line is not read (Redlock has none).",
	}, lockLabels)
	tenantDeferred = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "redlease_controller_tenant_deferred_total",
		Help: "Inline lock and LockStore reconciles deferred because their namespace's reconciles are slow (servers that do not answer) and it already used its share of the workers.",
	})
	redisClients = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "redlease_controller_redis_clients",
		Help: "Pooled Redis clients (one per server, database and credentials); each holds at most the pool size in connections.",
	})
)

func init() {
	metrics.Registry.MustRegister(probesTotal, locksGauge, fenceFloorRaised, replicaSettingsApplied, holderReads, tenantDeferred, redisClients,
		lockReady, lockHeld, lockFenceHighWater, lockHolderSince, lockWaiters)
}

// updateGauges refreshes the gauges from the reconciler's memory.
func (r *DistributedLockReconciler) updateGauges() {
	ready, notReady := r.state.counts()
	locksGauge.WithLabelValues("true").Set(float64(ready))
	locksGauge.WithLabelValues("false").Set(float64(notReady))
	redisClients.Set(float64(r.opts.Pool.Len()))
}

// setLockMetrics publishes the status the controller observed for the
// lock ns/name in the per-lock gauges (observed, even when its write is
// deferred).
func setLockMetrics(ns, name string, st *v1alpha1.DistributedLockStatus) {
	labels := []string{ns, name}
	ready, held, since := 0.0, 0.0, 0.0
	if readyStatus(st.Conditions) == "True" {
		ready = 1
	}
	if h := st.Holder; h != nil {
		held, since = 1, float64(h.Since.Unix())
	}
	lockReady.WithLabelValues(labels...).Set(ready)
	lockHeld.WithLabelValues(labels...).Set(held)
	lockFenceHighWater.WithLabelValues(labels...).Set(float64(st.FenceHighWater))
	lockHolderSince.WithLabelValues(labels...).Set(since)
	if st.Waiting != nil {
		lockWaiters.WithLabelValues(labels...).Set(float64(st.Waiting.Count))
	} else {
		lockWaiters.DeleteLabelValues(labels...)
	}
	lockConditions.set(types.NamespacedName{Namespace: ns, Name: name}, st.Conditions)
}

// deleteLockMetrics drops the per-lock series of a deleted lock.
func deleteLockMetrics(nn types.NamespacedName) {
	for _, g := range []*prometheus.GaugeVec{lockReady, lockHeld, lockFenceHighWater, lockHolderSince, lockWaiters} {
		g.DeleteLabelValues(nn.Namespace, nn.Name)
	}
	lockConditions.forget(nn)
}

package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Controller metrics, registered with controller-runtime's registry (served
// on the manager's metrics endpoint next to controller_runtime_*). Labels
// are bounded: no per-resource or per-server labels.
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
	redisClients = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "redlease_controller_redis_clients",
		Help: "Pooled Redis clients (one per server, database and credentials); each holds at most the pool size in connections.",
	})
)

func init() {
	metrics.Registry.MustRegister(probesTotal, locksGauge, fenceFloorRaised, replicaSettingsApplied, holderReads, redisClients)
}

// updateGauges refreshes the gauges from the reconciler's memory.
func (r *DistributedLockReconciler) updateGauges() {
	ready, notReady := r.state.counts()
	locksGauge.WithLabelValues("true").Set(float64(ready))
	locksGauge.WithLabelValues("false").Set(float64(notReady))
	redisClients.Set(float64(r.opts.Pool.Len()))
}

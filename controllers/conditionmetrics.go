package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Condition metrics, one gauge per kind, the way cert-manager exports its
// certificates' conditions: each object has one series per condition type,
// labelled with the condition's current status and reason, value 1. When
// the status or reason changes, the old series goes and the new one comes,
// so an alert selects on them (Preflight False with reason
// EvictionPolicyUnsafe, FailoverQuarantine True, Ready False for any
// reason). Labels are bounded: condition types and reasons are enums of
// the API. ClusterLockStores have an empty namespace.
var (
	lockConditions = newConditionGauge(prometheus.GaugeOpts{
		Name: "redlease_distributedlock_condition",
		Help: conditionHelp("DistributedLock"),
	})
	lockStoreConditions = newConditionGauge(prometheus.GaugeOpts{
		Name: "redlease_lockstore_condition",
		Help: conditionHelp("LockStore"),
	})
	clusterLockStoreConditions = newConditionGauge(prometheus.GaugeOpts{
		Name: "redlease_clusterlockstore_condition",
		Help: conditionHelp("ClusterLockStore"),
	})
)

func conditionHelp(kind string) string {
	return "1 for each condition of each " + kind + ", labelled with the condition's current status and reason (docs/operator.md lists them)."
}

func init() {
	metrics.Registry.MustRegister(lockConditions.vec, lockStoreConditions.vec, clusterLockStoreConditions.vec)
}

// conditionGauge is one kind's condition series, and the labels each
// object's series carry now (to delete them when they change).
type conditionGauge struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	last map[types.NamespacedName]map[string]conditionLabels
}

// conditionLabels are a condition's status and reason.
type conditionLabels struct{ status, reason string }

func newConditionGauge(opts prometheus.GaugeOpts) *conditionGauge {
	return &conditionGauge{
		vec:  prometheus.NewGaugeVec(opts, []string{"namespace", "name", "condition", "status", "reason"}),
		last: map[types.NamespacedName]map[string]conditionLabels{},
	}
}

// set makes nn's series those of conds.
func (g *conditionGauge) set(nn types.NamespacedName, conds []metav1.Condition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev := g.last[nn]
	next := make(map[string]conditionLabels, len(conds))
	for _, c := range conds {
		l := conditionLabels{string(c.Status), c.Reason}
		next[c.Type] = l
		if old, ok := prev[c.Type]; ok && old != l {
			g.vec.DeleteLabelValues(nn.Namespace, nn.Name, c.Type, old.status, old.reason)
		}
		g.vec.WithLabelValues(nn.Namespace, nn.Name, c.Type, l.status, l.reason).Set(1)
	}
	for typ, old := range prev {
		if _, ok := next[typ]; !ok {
			g.vec.DeleteLabelValues(nn.Namespace, nn.Name, typ, old.status, old.reason)
		}
	}
	g.last[nn] = next
}

// forget drops nn's series (the object was deleted).
func (g *conditionGauge) forget(nn types.NamespacedName) {
	g.set(nn, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.last, nn)
}

// conditionGauge is the condition series of the reconciler's kind.
func (s *StoreReconciler) conditionGauge() *conditionGauge {
	if s.kind == v1alpha1.StoreKindClusterLockStore {
		return clusterLockStoreConditions
	}
	return lockStoreConditions
}

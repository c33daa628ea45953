package controllers

import (
	"time"

	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// round is one reconcile of one lock: what each phase found, for the next
// phases and for the status.
type round struct {
	r *DistributedLockReconciler
	// store is what the store phases (resolve, probe, guard, preflight)
	// work on: the lock's inline store, or a LockStore or ClusterLockStore.
	store *storeSpec
	// dl is the lock whose key the lock phases read; nil when the round
	// reconciles a store.
	dl      *v1alpha1.DistributedLock
	key     string
	session *redisprobe.Session
	now     time.Time
	creds   lockCredentials

	// failReason/failMessage: a problem that stopped the round before the
	// servers could be probed (Secret, resolution, spec); EndpointsResolved
	// and Ready report it.
	failReason, failMessage string

	// endpoints are the data servers, sentinels the Sentinels.
	endpoints []*endpoint
	sentinels []*endpoint
	// sentinelMaster is the master the Sentinels name.
	sentinelMaster string
	// shards of a Cluster, and the key's slot (-1 unknown).
	shards []redisprobe.Shard
	slot   int

	// master is the server that takes the lock's writes (not Redlock, not
	// Cluster: see masters).
	master *endpoint
	// masterAddr is status.master: the master, or for Standalone and
	// Sentinel the server that should be it even when it does not answer.
	masterAddr string
	// masters are the servers that take writes: the master, every Cluster
	// master, every Redlock node.
	masters []*endpoint
	// masterReason/masterMessage explain a missing master.
	masterReason, masterMessage string

	guard     conditionResult
	quorum    conditionResult
	quorumN   int32
	preflight conditionResult

	// functions is FunctionsLoaded of a store round; functionsRefused is
	// true when a master has no functions or refuses FUNCTION to the
	// controller, so tenants must keep scripts.
	functions        conditionResult
	functionsRefused bool

	// tenants is TenantsProvisioned of a store round, tenantCount the
	// namespaces provisioned.
	tenants     conditionResult
	tenantCount int32
	// tenantLua says what Lua the tenant users may run (luaRights).
	tenantLua string

	// storeReady is StoreReady of a lock on a store.
	storeReady conditionResult
	// connection and credentialsSecret are what the lock publishes for
	// its pods (status.connection, status.credentialsSecretRef).
	connection        *v1alpha1.ConnectionStatus
	credentialsSecret string

	// holderRead is true when the holder was observed this round.
	holderRead bool
	holder     *v1alpha1.LockHolder
	highWater  int64
	// held and holders are status.held and status.holders.
	held    int32
	holders []v1alpha1.PermitHolder
	// waiting is status.waiting: nil when the line was not read (Redlock,
	// a server that did not report it).
	waiting *v1alpha1.LockWaiting
	// raised describes fence counters raised this round.
	raised []string

	// quarantine is what the round found about the lock's failover
	// quarantine.
	quarantine quarantineRound
}

// conditionResult is a computed condition before it goes into status.
type conditionResult struct {
	set     bool
	status  metav1.ConditionStatus
	reason  string
	message string
}

func result(status metav1.ConditionStatus, reason, message string) conditionResult {
	return conditionResult{set: true, status: status, reason: reason, message: capMessage(message)}
}

// fail records a problem that stops the round.
func (rd *round) fail(reason, message string) {
	rd.failReason, rd.failMessage = reason, capMessage(message)
}

// endpoint is one server the round talks to.
type endpoint struct {
	addr string
	// sentinel is true for a Redis Sentinel.
	sentinel bool
	// discovered is true for a server found through another (a master's
	// replica list), not named by the spec, a Service or the Sentinels.
	discovered bool

	client *redis.Client
	probed bool
	info   redisprobe.ServerInfo
	err    error

	// libraries are the redlease function libraries a master serves, as
	// the store round found (and loaded) them.
	libraries []string

	// config is read once per round, by the guard or the preflight.
	configRead bool
	config     redisprobe.ServerConfig
	configErr  error
}

func (e *endpoint) reachable() bool { return e.probed && e.err == nil }

func (e *endpoint) isMaster() bool { return e.reachable() && e.info.Role == redisprobe.RoleMaster }

// slotsOf is the slot ranges Cluster master addr serves, "" when unknown.
func (rd *round) slotsOf(addr string) string {
	for _, sh := range rd.shards {
		if sh.Master == addr {
			return slotRanges(sh.Slots)
		}
	}
	return ""
}

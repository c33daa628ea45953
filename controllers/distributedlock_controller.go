/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisprobe"
)

// RBAC of the manager, generated into config/rbac/role.yaml. Least
// privilege: the controller reads DistributedLocks and writes only their
// status (no finalizers, no spec writes); it reads the Services,
// EndpointSlices and Secrets locks reference; it gets the pod a holder's
// identity names (status.holder.pod, uncached: holderpod.go); it records
// Events.
//
// +kubebuilder:rbac:groups=redlease.io,resources=distributedlocks,verbs=get;list;watch
// +kubebuilder:rbac:groups=redlease.io,resources=distributedlocks/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=services;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of Options.
const (
	DefaultProbeInterval = 10 * time.Second
	DefaultProbeTimeout  = 10 * time.Second
)

// Options configure a DistributedLockReconciler. Zero values take defaults.
type Options struct {
	// ProbeInterval is how often a lock whose servers are healthy is
	// observed again. Unhealthy locks are retried sooner, backing off from
	// one second up to ProbeInterval. Default 10s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one reconcile's Redis work. Default 10s.
	ProbeTimeout time.Duration
	// Clock stamps holder.since and condition times. Default: the real clock.
	Clock clock.PassiveClock
	// Pool holds the Redis clients; the caller closes it. Default: a pool
	// with redisprobe's defaults (closed by nobody: pass one in production).
	Pool *redisprobe.Pool
	// DisallowInlineLocks refuses DistributedLocks that name their own
	// servers (spec.redis): in a multi-tenant cluster a namespace editor
	// could otherwise point the controller anywhere. Default false (the
	// manager's --allow-inline-locks=true).
	DisallowInlineLocks bool
}

// DistributedLockReconciler observes the Redis behind each DistributedLock
// and reports it in status. Create it with NewDistributedLockReconciler.
type DistributedLockReconciler struct {
	kube      client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	opts      Options

	guards  *guardRegistry
	secrets *secretCache
	state   *stateStore
	// snapshots are the stores' batched reads of their locks' keys.
	snapshots *holderSnapshots
	// tenants keeps a slow namespace's inline locks from taking every
	// worker (set up with the controller's MaxConcurrentReconciles).
	tenants *tenantGate
	// probes bounds the probes in flight in the process.
	probes probeSlots
}

// NewDistributedLockReconciler returns a reconciler that reads through c
// (the manager's cached client), reads Secret data through apiReader (an
// uncached reader: only Secret metadata is cached) and records Events with
// recorder.
func NewDistributedLockReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts Options) *DistributedLockReconciler {
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Pool == nil {
		opts.Pool = redisprobe.NewPool(redisprobe.PoolOptions{})
	}
	return &DistributedLockReconciler{
		kube:      c,
		apiReader: apiReader,
		recorder:  boundedRecorder{recorder},
		opts:      opts,
		guards:    newGuardRegistry(),
		secrets:   newSecretCache(),
		state:     newStateStore(),
		snapshots: newHolderSnapshots(),
		// setup sizes the gate to the controller's workers.
		tenants: newTenantGate(opts.Clock, 1),
		probes:  make(probeSlots, probesPerProcess),
	}
}

// Reconcile observes one DistributedLock's key (and, for an inline lock,
// its servers) and patches its status when the observation changed it.
// Redis problems are conditions, Events and a requeue with backoff, never
// errors; errors are for the API server.
func (r *DistributedLockReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var dl v1alpha1.DistributedLock
	if err := r.kube.Get(ctx, req.NamespacedName, &dl); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
			return reconcile.Result{}, r.releasesOfMissingLock(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, fmt.Errorf("reading DistributedLock %s: %w", req.NamespacedName, err)
	}
	if dl.Spec.Inline() { // locks on a store do no probing: they are quick
		done, ok := r.tenants.enter(dl.Namespace)
		if !ok {
			tenantDeferred.Inc()
			return reconcile.Result{RequeueAfter: tenantRetry}, nil
		}
		defer done()
	}
	st, replaced := r.state.get(req.NamespacedName, dl.UID)
	if replaced != nil {
		// Deleted and re-created under the same name between two
		// reconciles: the old incarnation is gone as surely as after a
		// NotFound, with its pooled clients and its Deleted Event.
		r.retire(ctx, req.NamespacedName, replaced)
	}
	orig := dl.DeepCopy()
	rd := &round{
		r:       r,
		dl:      &dl,
		session: r.opts.Pool.Session(string(dl.UID)),
		now:     r.now().Truncate(time.Second),
	}
	defer rd.session.End()

	pctx, cancel := context.WithTimeout(ctx, r.opts.ProbeTimeout)
	defer cancel()
	var terminal error
	if dl.Spec.Inline() {
		terminal = r.observeInline(pctx, rd)
	} else {
		terminal = r.observeOnStore(pctx, rd)
	}
	st.setKey(rd.key)
	releasing := terminal == nil && r.breakGlass(pctx, rd)
	res, err := r.finishLock(ctx, rd, orig, st, terminal)
	if releasing && err == nil && (res.RequeueAfter == 0 || res.RequeueAfter > releasePending) {
		res.RequeueAfter = releasePending
	}
	return res, err
}

// observeInline runs the store phases on the lock's own servers, then the
// lock phases. It returns a terminal error for a spec retries cannot fix.
func (r *DistributedLockReconciler) observeInline(ctx context.Context, rd *round) error {
	dl := rd.dl
	rd.store = inlineStore(dl)
	rd.key = dl.EffectiveKey(false)
	if r.opts.DisallowInlineLocks {
		rd.fail(v1alpha1.ReasonInlineLocksDisabled, "this controller runs with --allow-inline-locks=false: put the lock on a LockStore or ClusterLockStore (spec.storeRef); delete and re-create it to move it")
		return nil
	}
	if err := r.checkLockSpec(rd); err != nil {
		return err
	}
	r.guards.markSeen(rd.store.requester())
	r.observeStore(ctx, rd)
	r.observeHolder(ctx, rd)
	r.observeQuarantine(ctx, rd, nil)
	r.publishInline(ctx, rd)
	logf.FromContext(ctx).V(1).Info("observed", "endpoints", len(rd.endpoints), "master", rd.master, "resolveReason", rd.failReason)
	return nil
}

// checkLockSpec refuses what the API server holds but the controller cannot
// use (an effective key the library refuses, an object stored before a
// rule): InvalidSpec and a terminal error.
func (r *DistributedLockReconciler) checkLockSpec(rd *round) error {
	nn := types.NamespacedName{Namespace: rd.dl.Namespace, Name: rd.dl.Name}
	if err := protocol.ValidateKey(rd.key); err != nil {
		rd.fail(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("the effective key %q cannot be used: %v", rd.key, err))
		return reconcile.TerminalError(fmt.Errorf("DistributedLock %s: %w", nn, err))
	}
	if msg := specProblem(&rd.dl.Spec, rd.store.redis); msg != "" {
		rd.fail(v1alpha1.ReasonInvalidSpec, msg)
		return reconcile.TerminalError(fmt.Errorf("DistributedLock %s: %s", nn, msg))
	}
	return nil
}

// observeStore runs the store phases of one round; each records what it
// found in rd, and a phase that cannot go on stops the rest.
func (r *DistributedLockReconciler) observeStore(ctx context.Context, rd *round) {
	if !r.loadCredentials(ctx, rd) {
		return
	}
	if !r.resolve(ctx, rd) || rd.tooManyEndpoints(len(rd.endpoints), "resolved") {
		return
	}
	if !r.probeEndpoints(ctx, rd) {
		return
	}
	r.pickMaster(ctx, rd)
	switch rd.store.redis.Mode {
	case v1alpha1.RedisModeRedlock:
		r.checkRedlock(rd)
	case v1alpha1.RedisModeReplicated, v1alpha1.RedisModeSentinel, v1alpha1.RedisModeCluster:
		r.guardReplicas(ctx, rd)
	}
	r.preflight(ctx, rd)
}

// finishLock is the end of every lock reconcile: the status is computed
// from the round, patched once when it changed, Events follow a successful
// write, and the next reconcile is scheduled.
func (r *DistributedLockReconciler) finishLock(ctx context.Context, rd *round, orig *v1alpha1.DistributedLock, st *lockState, terminal error) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	dl := rd.dl
	setLockStatus(rd)
	r.fillHolderPod(ctx, rd, st, orig.Status.Holder)
	observed := dl.Status.DeepCopy() // for the metrics, written or not
	now := r.now()
	changed := !equality.Semantic.DeepEqual(orig.Status, dl.Status)
	deferred := changed && !statusUrgent(&orig.Status, &dl.Status, rd) && !st.writeDue(now, r.opts.ProbeInterval)
	if deferred {
		// Only the holder or the fence moved, and this lock's status was
		// written less than a probe interval ago: busy locks would write
		// (and wake every pod watching them) on every reconcile. The next
		// reconcile past the interval publishes it, within one interval
		// (nextReconcile would wait for a store lock's resync).
		dl.Status = orig.Status
		changed = false
		log.V(2).Info("holder change deferred to the status cadence")
	}
	if changed {
		if err := r.kube.Status().Patch(ctx, dl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// A newer version is on its way through the watch.
				log.V(1).Info("status patch raced a newer version; retrying", "error", err.Error())
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, errors.Join(terminal, fmt.Errorf("patching the status of %s/%s: %w", dl.Namespace, dl.Name, err))
		}
		st.wrote(now)
		log.V(1).Info("status updated", "ready", readyStatus(dl.Status.Conditions))
	}
	r.emitTransitions(dl, dl.Status.Conditions, orig.Status.Conditions, orig.Status.Master, dl.Status.Master)
	ready := readyStatus(dl.Status.Conditions) == "True"
	r.state.setReady(types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name}, ready)
	r.updateGauges()
	setLockMetrics(dl.Namespace, dl.Name, observed)
	if terminal != nil {
		return reconcile.Result{}, terminal
	}
	next := r.nextReconcile(rd, &st.retry, ready)
	if deferred {
		next = min(next, r.opts.ProbeInterval)
	}
	if q := rd.quarantine; q.read && q.left > 0 {
		// Back when the quarantine ends, to clear status.quarantinedUntil.
		next = min(next, q.left+quarantineRecheck)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// quarantineRecheck is how long after a quarantine's end the lock is
// reconciled again: past the end on the server's clock.
const quarantineRecheck = 200 * time.Millisecond

// storeLockResync is how often a Ready lock on a store is reconciled when
// nothing it watches changed, in probe intervals: its store's batched read
// enqueues it when its key changes, its store's status and its own spec
// through the watches.
const storeLockResync = 10

// nextReconcile schedules the next reconcile: requeueAfter's cadence for an
// inline lock, which probes its own servers, and for a lock on a store that
// failed for itself (a read, its credentials); storeLockResync probe
// intervals for a lock on a store that is Ready, or that waits for its
// store to become Ready (the store's status write brings it back).
func (r *DistributedLockReconciler) nextReconcile(rd *round, retry *backoff.Exponential, ready bool) time.Duration {
	if !rd.dl.Spec.Inline() && (ready || rd.failReason == v1alpha1.ReasonStoreNotReady) {
		retry.Reset()
		interval := storeLockResync * r.opts.ProbeInterval
		return interval + backoff.Jitter(interval/10)
	}
	return r.requeueAfter(retry, ready)
}

// forget is a deleted lock: drop its pool references, guard wishes and
// memory, and say in an Event that Redis was left alone.
func (r *DistributedLockReconciler) forget(ctx context.Context, nn types.NamespacedName) {
	deleteLockMetrics(nn)
	st, ok := r.state.remove(nn)
	if !ok {
		r.guards.forget(kindInline + "/" + nn.Namespace + "/" + nn.Name)
		r.updateGauges()
		return
	}
	r.retire(ctx, nn, st)
}

// retire ends one incarnation of nn (st, by its UID): its pooled clients
// are released, its guard wishes dropped, and an Event says Redis was
// left alone.
func (r *DistributedLockReconciler) retire(ctx context.Context, nn types.NamespacedName, st *lockState) {
	r.guards.forget(kindInline + "/" + nn.Namespace + "/" + nn.Name)
	r.updateGauges()
	r.opts.Pool.Release(string(st.uid))
	logf.FromContext(ctx).Info("DistributedLock deleted; Redis left alone: live leases run to their TTL, the fence counter and replica settings stay", "key", st.getKey())
	r.emitDeleted(nn, st)
}

func (r *DistributedLockReconciler) now() time.Time { return r.opts.Clock.Now() }

// requeueAfter is the probe interval (plus 5 to 10% jitter so that many
// locks do not probe in step) for a Ready lock, and a backoff from one
// second up to the probe interval for a lock that is not.
func (r *DistributedLockReconciler) requeueAfter(retry *backoff.Exponential, ready bool) time.Duration {
	interval := r.opts.ProbeInterval
	retry.Min, retry.Max = time.Second, interval
	if ready {
		retry.Reset()
		return interval + backoff.Jitter(interval/10)
	}
	return retry.Step()
}

// stateStore is what the reconciler remembers about each lock between
// reconciles: nothing that status does not already say, except the backoff
// and what a deletion Event needs.
type stateStore struct {
	mu    sync.Mutex
	locks map[types.NamespacedName]*lockState
	// ready counts the locks whose ready is true, kept as they change so
	// that the gauges cost nothing per reconcile (a count over 10,000
	// locks on every reconcile, under mu, was a sixth of the manager's CPU
	// while they became Ready).
	ready int
}

type lockState struct {
	uid   types.UID
	retry backoff.Exponential // from one second up to the probe interval

	// ready is the stateStore's (guarded by its mu).
	ready bool

	mu  sync.Mutex
	key string
	// lastWrite is when this controller last wrote the lock's status.
	lastWrite time.Time
	// pod is the last lookup of the holder's pod (fillHolderPod).
	pod holderPod
}

// writeDue reports whether a status change that is not urgent may be
// written now: at most one such write per interval.
func (st *lockState) writeDue(now time.Time, interval time.Duration) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return now.Sub(st.lastWrite) >= interval
}

func (st *lockState) wrote(now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lastWrite = now
}

func newStateStore() *stateStore {
	return &stateStore{locks: map[types.NamespacedName]*lockState{}}
}

// get returns the state of nn, starting afresh when the UID changed (the
// lock was deleted and re-created under the same name); replaced is then
// the previous incarnation's state, for the caller to retire.
func (s *stateStore) get(nn types.NamespacedName, uid types.UID) (st, replaced *lockState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st = s.locks[nn]
	if st != nil && st.uid == uid {
		return st, nil
	}
	replaced = st
	if replaced != nil && replaced.ready {
		s.ready--
	}
	st = &lockState{uid: uid}
	s.locks[nn] = st
	return st, replaced
}

func (s *stateStore) remove(nn types.NamespacedName) (*lockState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.locks[nn]
	if ok && st.ready {
		s.ready--
	}
	delete(s.locks, nn)
	return st, ok
}

// setReady records whether nn is Ready. ready is guarded by s.mu.
func (s *stateStore) setReady(nn types.NamespacedName, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.locks[nn]; st != nil && st.ready != ready {
		st.ready = ready
		if ready {
			s.ready++
		} else {
			s.ready--
		}
	}
}

// counts returns how many locks are Ready and not.
func (s *stateStore) counts() (ready, notReady int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready, len(s.locks) - s.ready
}

func (st *lockState) setKey(k string) {
	st.mu.Lock()
	st.key = k
	st.mu.Unlock()
}

func (st *lockState) getKey() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.key
}

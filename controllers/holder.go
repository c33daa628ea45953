package controllers

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisprobe"
)

// unrecognizedHolder is the identity shown for a lock key whose value this
// library did not write.
const unrecognizedHolder = "(unrecognized value)"

// maxIdentity is status.holder.identity's schema bound.
const maxIdentity = 512

// observeHolder reads the lock key and fence counter on the servers that
// take the lock's writes, names the holder (identity only, never the
// value), keeps fenceHighWater, and raises any existing counter found below
// it. When the servers cannot be read the previous holder stays in status.
func (r *DistributedLockReconciler) observeHolder(ctx context.Context, rd *round) {
	redlock := rd.store.redis.Mode == v1alpha1.RedisModeRedlock
	sources := holderSources(rd)
	if len(sources) == 0 {
		return
	}
	if !redlock && rd.dl.Spec.Semaphore() && r.observePermits(ctx, rd) {
		return
	}
	reads := r.readHolders(ctx, rd, sources)
	if !redlock && !rd.dl.Spec.Semaphore() && slices.ContainsFunc(reads, isSemaphoreRead) && r.observePermits(ctx, rd) {
		return // permits lowered to 1 while a semaphore's permits are held
	}
	ok := usableReads(ctx, reads, redlock)
	if len(ok) == 0 {
		return
	}
	need := 1
	if redlock {
		need = int(rd.quorumN)
	}
	identity, held := electHolder(ok, need)

	prev := rd.dl.Status
	highWater := prev.FenceHighWater
	maxFence, fenceSeen := uint64(0), false
	fencing := rd.dl.Spec.FencingEnabled()
	if fencing {
		maxFence, fenceSeen = highestFence(ok)
		highWater = max(highWater, clampInt64(maxFence))
		r.raiseFenceFloors(ctx, rd, ok, prev.FenceHighWater, highWater)
	}

	rd.holderRead = true
	rd.highWater = highWater
	rd.held, rd.holders = 0, nil
	rd.waiting = lockWaiting(lineOf(ok, redlock))
	if !held {
		rd.holder = nil
		return
	}
	rd.held = 1
	fence := int64(0)
	if fencing && fenceSeen {
		fence = clampInt64(maxFence)
	}
	rd.holder = nextHolder(prev.Holder, identity, fence, prev.FenceHighWater, rd.now)
}

// isSemaphoreRead reports a read of a key that holds a semaphore's set.
func isSemaphoreRead(rr holderRead) bool { return redis.HasErrorPrefix(rr.err, "WRONGTYPE") }

// observePermits reads the key as a semaphore's on the master: how many
// permits are held, the first MaxStatusHolders holders by expiry of which
// it shows the confirmed ones (identity, fence, since; never a value), the fence counter, which it keeps above fenceHighWater as for a
// lock. It returns false, having observed nothing, when the key is a
// lock's (permits raised while the lock is held: observe it as one); a
// failed read leaves the previous observation in status.
func (r *DistributedLockReconciler) observePermits(ctx context.Context, rd *round) bool {
	reads, errs := protocol.ReadKeys(ctx, protocol.Scripts(rd.master.client), []string{rd.key}, statusReadLimits)
	p := reads[0].Permits
	switch {
	case errs[0] != nil:
		logf.FromContext(ctx).V(1).Info("cannot read the semaphore", "server", rd.master.addr, "error", errs[0].Error())
		return true
	case p == nil && reads[0].Holder.Held:
		return false
	case p == nil: // no permit held
		p = &protocol.Permits{FenceSet: reads[0].Holder.FenceSet, Fence: reads[0].Holder.Fence, Line: reads[0].Holder.Line}
	}
	prev := rd.dl.Status
	rd.holderRead, rd.holder = true, nil
	rd.highWater = prev.FenceHighWater
	fencing := rd.dl.Spec.FencingEnabled()
	if fencing {
		rd.highWater = max(rd.highWater, clampInt64(p.Fence))
		read := holderRead{e: rd.master, h: protocol.Holder{FenceSet: p.FenceSet, Fence: p.Fence}}
		r.raiseFenceFloors(ctx, rd, []holderRead{read}, prev.FenceHighWater, rd.highWater)
	}
	rd.held = clampInt32(p.Live)
	rd.holders = permitHolders(p.Holders, fencing)
	rd.waiting = lockWaiting(p.Line)
	return true
}

// permitHolders are status.holders: the confirmed holders, the longest-held
// first, at most MaxStatusHolders.
func permitHolders(hs []protocol.PermitHolder, fencing bool) []v1alpha1.PermitHolder {
	var out []v1alpha1.PermitHolder
	for _, h := range hs {
		if !h.Confirmed {
			continue
		}
		id := h.Identity
		if id == "" {
			id = unrecognizedHolder
		}
		ph := v1alpha1.PermitHolder{Identity: id[:min(len(id), maxIdentity)], Since: metav1.NewTime(h.Since)}
		if fencing {
			ph.Fence = clampInt64(h.Fence)
		}
		out = append(out, ph)
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.PermitHolder) int {
		return cmp.Or(a.Since.Compare(b.Since.Time), cmp.Compare(a.Fence, b.Fence))
	})
	return out[:min(len(out), v1alpha1.MaxStatusHolders)]
}

// holderSources are the servers that take the lock's writes: every Redlock
// node, else the master (none when it is unknown).
func holderSources(rd *round) []*endpoint {
	switch {
	case rd.store.redis.Mode == v1alpha1.RedisModeRedlock:
		return rd.masters
	case rd.master != nil:
		return []*endpoint{rd.master}
	}
	return nil
}

// holderRead is what one server says about the lock key.
type holderRead struct {
	e   *endpoint
	h   protocol.Holder
	err error
}

// readHolders reads the round's key on every source: from the store's
// batched read when it is recent (a lock on a store), else from the server,
// concurrently.
func (r *DistributedLockReconciler) readHolders(ctx context.Context, rd *round, sources []*endpoint) []holderRead {
	reads := make([]holderRead, len(sources))
	notBefore := r.now().Add(-r.snapshotMaxAge())
	var wg sync.WaitGroup
	for i, e := range sources {
		if h, ok := r.snapshots.get(rd.store, e.addr, rd.key, notBefore); ok {
			holderReads.WithLabelValues("batch").Inc()
			reads[i] = holderRead{e: e, h: h}
			continue
		}
		holderReads.WithLabelValues("direct").Inc()
		wg.Go(func() {
			var h protocol.Holder
			err := redisprobe.Recover(ctx, func() (err error) {
				h, err = protocol.ReadHolder(ctx, protocol.Scripts(e.client), rd.key)
				return err
			})
			reads[i] = holderRead{e: e, h: h, err: err}
		})
	}
	wg.Wait()
	return reads
}

// usableReads returns the reads that succeeded, logging the others; none
// when nothing succeeded or, outside Redlock, when any read failed.
func usableReads(ctx context.Context, reads []holderRead, redlock bool) []holderRead {
	log := logf.FromContext(ctx)
	ok := reads[:0:0]
	for _, rr := range reads {
		if rr.err != nil {
			log.V(1).Info("cannot read the lock key", "server", rr.e.addr, "error", rr.err.Error())
			continue
		}
		ok = append(ok, rr)
	}
	if !redlock && len(ok) != len(reads) {
		return nil
	}
	return ok
}

// electHolder names who holds the lock: an identity present on at least
// need of the reads (on one master, whoever's value is there; on Redlock
// nodes a quorum, as a minority is an attempt that failed or a lease
// running out). A value this library did not write counts as
// unrecognizedHolder; identities are cut to the schema's bound. Of several
// qualifying identities the smallest wins, so the answer is stable.
func electHolder(reads []holderRead, need int) (identity string, held bool) {
	counts := map[string]int{}
	for _, rr := range reads {
		if !rr.h.Held {
			continue
		}
		id := rr.h.Identity
		if id == "" {
			id = unrecognizedHolder
		}
		if len(id) > maxIdentity {
			id = id[:maxIdentity]
		}
		counts[id]++
	}
	for id, n := range counts {
		if n >= need && (!held || id < identity) {
			identity, held = id, true
		}
	}
	return identity, held
}

// highestFence returns the largest fence counter among the reads, and
// whether any read found a counter at all.
func highestFence(reads []holderRead) (highest uint64, seen bool) {
	for _, rr := range reads {
		if rr.h.FenceSet {
			seen = true
			highest = max(highest, rr.h.Fence)
		}
	}
	return highest, seen
}

// raiseFenceFloors raises every counter read below prevHW (a clock went
// back, a failover lost increments) to highWater, so the next acquisition
// gets a fence above every fence seen. A missing counter is left alone: the
// acquire script starts it from the server clock, which is above fences
// this controller never saw.
func (r *DistributedLockReconciler) raiseFenceFloors(ctx context.Context, rd *round, reads []holderRead, prevHW, highWater int64) {
	if prevHW <= 0 {
		return // no counter is below 0: nothing to raise
	}
	log := logf.FromContext(ctx)
	floor := uint64(max(highWater, prevHW)) // highWater ≥ prevHW > 0 already; max keeps the bound visible
	for _, rr := range reads {
		if !rr.h.FenceSet || clampInt64(rr.h.Fence) >= prevHW {
			continue
		}
		raised, err := protocol.RaiseFence(ctx, protocol.Scripts(rr.e.client), rd.key, floor)
		if err != nil {
			log.Info("cannot raise the fence counter", "server", rr.e.addr, "error", err.Error())
			continue
		}
		if !raised {
			continue
		}
		fenceFloorRaised.Inc()
		note := fmt.Sprintf("fence counter %s on %s was %d, below fenceHighWater %d (a clock went back or a failover lost increments): raised to %d, so the next lease gets a fence above every fence seen",
			protocol.FenceKey(rd.key), rr.e.addr, rr.h.Fence, prevHW, highWater)
		rd.raised = append(rd.raised, note)
		log.Info("raised the fence floor", "server", rr.e.addr, "was", rr.h.Fence, "now", highWater)
		r.recorder.Eventf(rd.dl, nil, corev1.EventTypeWarning, v1alpha1.ReasonFenceFloorRaised, "RaiseFence", "%s", note)
	}
}

// nextHolder is status.holder for identity holding the lock with fence
// (0 when unknown), given the previous one: the same identity keeps its
// since, and takes the new fence only when it is above prevHW (a new lease);
// another identity starts at now.
func nextHolder(prev *v1alpha1.LockHolder, identity string, fence, prevHW int64, now time.Time) *v1alpha1.LockHolder {
	if prev != nil && prev.Identity == identity {
		h := *prev
		if fence > prevHW {
			h.Fence = fence
		}
		return &h
	}
	return &v1alpha1.LockHolder{Identity: identity, Fence: fence, Since: metav1.NewTime(now)}
}

// clampInt32 is n, or the nearest int32 when n is outside their range.
func clampInt32(n int) int32 {
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int32(n)
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

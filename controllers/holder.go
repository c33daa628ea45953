package controllers

import (
	"context"
	"fmt"
	"math"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
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
	log := logf.FromContext(ctx)
	sources := rd.masters
	if rd.dl.Spec.Redis.Mode != v1alpha1.RedisModeRedlock {
		sources = nil
		if rd.master != nil {
			sources = []*endpoint{rd.master}
		}
	}
	if len(sources) == 0 {
		return
	}
	type read struct {
		e   *endpoint
		h   protocol.Holder
		err error
	}
	reads := make([]read, len(sources))
	var wg sync.WaitGroup
	for i, e := range sources {
		wg.Go(func() {
			h, err := protocol.ReadHolder(ctx, e.client, rd.key)
			reads[i] = read{e: e, h: h, err: err}
		})
	}
	wg.Wait()

	ok := reads[:0:0]
	for _, rr := range reads {
		if rr.err != nil {
			log.V(1).Info("cannot read the lock key", "server", rr.e.addr, "error", rr.err.Error())
			continue
		}
		ok = append(ok, rr)
	}
	if len(ok) == 0 || (rd.dl.Spec.Redis.Mode != v1alpha1.RedisModeRedlock && len(ok) != len(reads)) {
		return
	}

	// Who holds it: on one master, whoever's value is there; on Redlock
	// nodes, an identity present on a quorum of them (a minority is an
	// attempt that failed or a lease running out).
	identity, held := "", false
	counts := map[string]int{}
	for _, rr := range ok {
		if rr.h.Held {
			id := rr.h.Identity
			if id == "" {
				id = unrecognizedHolder
			}
			if len(id) > maxIdentity {
				id = id[:maxIdentity]
			}
			counts[id]++
		}
	}
	need := 1
	if rd.dl.Spec.Redis.Mode == v1alpha1.RedisModeRedlock {
		need = int(rd.quorumN)
	}
	for id, n := range counts {
		if n >= need && (!held || id < identity) {
			identity, held = id, true
		}
	}

	prev := rd.dl.Status
	prevHW := prev.FenceHighWater
	highWater := prevHW
	var maxFence uint64
	fenceSeen := false
	fencing := rd.dl.Spec.FencingEnabled()
	if fencing {
		for _, rr := range ok {
			if rr.h.FenceSet {
				fenceSeen = true
				maxFence = max(maxFence, rr.h.Fence)
			}
		}
		highWater = max(highWater, clampInt64(maxFence))
		// A counter below what was seen before (a clock went back, a
		// failover lost increments) goes up to the high-water mark, so the
		// next acquisition gets a fence above every fence seen. A missing
		// counter is left alone: the acquire script starts it from the
		// server clock, which is above fences this controller never saw.
		for _, rr := range ok {
			if !rr.h.FenceSet || clampInt64(rr.h.Fence) >= prevHW {
				continue
			}
			raised, err := protocol.RaiseFence(ctx, rr.e.client, rd.key, uint64(highWater))
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

	rd.holderRead = true
	rd.highWater = highWater
	if !held {
		rd.holder = nil
		return
	}
	fence := int64(0)
	if fencing && fenceSeen {
		fence = clampInt64(maxFence)
	}
	if p := prev.Holder; p != nil && p.Identity == identity {
		h := *p
		// The same identity with a counter above everything seen before
		// took a new lease.
		if fence > prevHW {
			h.Fence = fence
		}
		rd.holder = &h
		return
	}
	rd.holder = &v1alpha1.LockHolder{Identity: identity, Fence: fence, Since: metav1.NewTime(rd.now)}
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

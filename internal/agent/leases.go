/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/redlease/redlease/pkg/lock"
)

// endedKept is how many ended handles the table remembers, so that a late
// KeepAlive learns why its lease ended rather than "unknown".
const endedKept = 4096

// leaseTable holds the unary leases: each lives while keep-alives arrive.
// No goroutine watches a lease: a keep-alive only moves its due time, and
// one timer per lease fires at the latest due time, re-arming itself when
// keep-alives moved it (a goroutine and a wake-up per keep-alive cost a
// busy agent most of its own CPU and a few KiB per lease). A lease that
// ended in the library (lost, past its deadline) is noticed by the next
// KeepAlive or Release, or by its timer: its client is told then, and the
// library never let it be reported held past its deadline anyway.
type leaseTable struct {
	log   logr.Logger
	mu    sync.Mutex
	held  map[string]*heldLease
	ended map[string]error // why each recently ended handle ended
	order []string         // ended handles, oldest first
}

// heldLease is one unary lease and its keep-alive clock.
type heldLease struct {
	lease  *lock.Lease
	period time.Duration
	due    time.Time   // released then unless a KeepAlive comes first; guarded by the table's mu
	timer  *time.Timer // fires at or after due
}

func newLeaseTable(log logr.Logger) *leaseTable {
	return &leaseTable{log: log, held: map[string]*heldLease{}, ended: map[string]error{}}
}

// add starts keeping lease alive while keep-alives arrive within period
// and returns its handle.
func (t *leaseTable) add(lease *lock.Lease, period time.Duration) string {
	id := newHandle()
	h := &heldLease{lease: lease, period: period}
	t.mu.Lock()
	defer t.mu.Unlock()
	h.due = time.Now().Add(period)
	h.timer = time.AfterFunc(period, func() { t.expire(id, h) })
	t.held[id] = h
	return id
}

// expire runs when h's timer fires: it re-arms the timer when a keep-alive
// moved the due time, else releases the lease (no keep-alive within its
// period) or forgets it (it ended on its own).
func (t *leaseTable) expire(id string, h *heldLease) {
	t.mu.Lock()
	if t.held[id] != h { // released, or the agent is stopping
		t.mu.Unlock()
		return
	}
	if left := time.Until(h.due); left > 0 {
		h.timer.Reset(left)
		t.mu.Unlock()
		return
	}
	if err := h.lease.Err(); err != nil {
		t.endLocked(id, err)
		t.mu.Unlock()
		return
	}
	t.endLocked(id, fmt.Errorf("%w: %q released by the agent: no keep-alive within %v", lock.ErrLeaseLost, h.lease.Key(), h.period))
	t.mu.Unlock()
	t.log.Info("released a lease without keep-alives", "key", h.lease.Key(), "fence", h.lease.Fence(), "period", h.period)
	_ = release(h.lease)
}

// keepAlive records a keep-alive for id and returns its lease; the error
// says why there is none.
func (t *leaseTable) keepAlive(id string) (*heldLease, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, err := t.liveLocked(id)
	if err != nil {
		return nil, err
	}
	h.due = time.Now().Add(h.period)
	return h, nil
}

// remove forgets id for a Release and returns its lease.
func (t *leaseTable) remove(id string) (*heldLease, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, err := t.liveLocked(id)
	if err != nil {
		return nil, err
	}
	h.timer.Stop()
	t.endLocked(id, fmt.Errorf("%w: released by its client", lock.ErrReleased))
	return h, nil
}

// holds says whether id names a lease that is still held.
func (t *leaseTable) holds(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.liveLocked(id)
	return err == nil
}

// liveLocked returns id's lease while it is held; else why it is not
// (unknown, ended before, or ended in the library just now: then it moves
// to ended). t.mu is held.
func (t *leaseTable) liveLocked(id string) (*heldLease, error) {
	h, ok := t.held[id]
	if !ok {
		if err, ok := t.ended[id]; ok {
			return nil, err
		}
		return nil, errLeaseUnknown
	}
	if err := h.lease.Err(); err != nil {
		h.timer.Stop()
		t.endLocked(id, err)
		return nil, err
	}
	return h, nil
}

// endLocked moves id from held to ended with err. t.mu is held.
func (t *leaseTable) endLocked(id string, err error) {
	delete(t.held, id)
	t.ended[id] = err
	t.order = append(t.order, id)
	if len(t.order) > endedKept {
		delete(t.ended, t.order[0])
		t.order = t.order[1:]
	}
}

// releaseAll releases every held lease: the agent is stopping.
func (t *leaseTable) releaseAll() {
	t.mu.Lock()
	held := t.held
	t.held = map[string]*heldLease{}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range held {
		h.timer.Stop()
		wg.Go(func() {
			if err := release(h.lease); err != nil && !errors.Is(err, lock.ErrLeaseLost) && !errors.Is(err, lock.ErrReleased) {
				t.log.Info("could not release a lease while stopping: it expires with its TTL", "key", h.lease.Key(), "error", err.Error())
			}
		})
	}
	wg.Wait()
}

// newHandle is a lease handle: 128 random bits, unguessable by another
// client of the agent.
func newHandle() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

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
type leaseTable struct {
	log   logr.Logger
	mu    sync.Mutex
	held  map[string]*heldLease
	ended map[string]error // why each recently ended handle ended
	order []string         // ended handles, oldest first
}

// heldLease is one unary lease and its keep-alive clock.
type heldLease struct {
	lock   Lock
	lease  *lock.Lease
	period time.Duration
	alive  chan struct{} // a KeepAlive arrived
	gone   chan struct{} // Release or the agent's Close: stop watching
}

func newLeaseTable(log logr.Logger) *leaseTable {
	return &leaseTable{log: log, held: map[string]*heldLease{}, ended: map[string]error{}}
}

// add starts keeping lease alive while keep-alives arrive within period
// and returns its handle.
func (t *leaseTable) add(l Lock, lease *lock.Lease, period time.Duration) string {
	id := newHandle()
	h := &heldLease{lock: l, lease: lease, period: period, alive: make(chan struct{}, 1), gone: make(chan struct{})}
	t.mu.Lock()
	t.held[id] = h
	t.mu.Unlock()
	go t.supervise(id, h)
	return id
}

// supervise releases h when no keep-alive came for its period and forgets
// it when it ends otherwise.
func (t *leaseTable) supervise(id string, h *heldLease) {
	timer := time.NewTimer(h.period)
	defer timer.Stop()
	for {
		select {
		case <-h.alive:
			if !timer.Stop() {
				<-timer.C
			}
			timer.Reset(h.period)
		case <-timer.C:
			err := fmt.Errorf("%w: %q released by the agent: no keep-alive within %v", lock.ErrLeaseLost, h.lease.Key(), h.period)
			t.log.Info("released a lease without keep-alives", "key", h.lease.Key(), "fence", h.lease.Fence(), "period", h.period)
			t.end(id, err)
			_ = release(h.lease)
			return
		case <-h.lease.Done():
			t.end(id, h.lease.Err())
			return
		case <-h.gone:
			return
		}
	}
}

// keepAlive records a keep-alive for id and returns its lease; the error
// says why there is none.
func (t *leaseTable) keepAlive(id string) (*heldLease, error) {
	h, err := t.get(id)
	if err != nil {
		return nil, err
	}
	if err := h.lease.Err(); err != nil { // ended, its supervisor not yet told
		t.end(id, err)
		return nil, err
	}
	select {
	case h.alive <- struct{}{}:
	default: // one is pending already
	}
	return h, nil
}

// remove forgets id for a Release and returns its lease.
func (t *leaseTable) remove(id string) (*heldLease, error) {
	h, err := t.get(id)
	if err != nil {
		return nil, err
	}
	t.end(id, fmt.Errorf("%w: released by its client", lock.ErrReleased))
	close(h.gone)
	return h, nil
}

func (t *leaseTable) get(id string) (*heldLease, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.held[id]; ok {
		return h, nil
	}
	if err, ok := t.ended[id]; ok {
		return nil, err
	}
	return nil, errLeaseUnknown
}

// end moves id from held to ended with err, once.
func (t *leaseTable) end(id string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.held[id]; !ok {
		return
	}
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
		close(h.gone)
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

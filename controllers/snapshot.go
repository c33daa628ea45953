/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisprobe"
)

// batchKeys is how many lock keys one pipelined round reads (one bounded
// read script each): large enough that 10,000 locks take 20 rounds, small
// enough that one round's replies stay well under a megabyte.
const batchKeys = 512

// statusReadLimits bound the controller's reads of a key to what status
// shows: the first MaxStatusHolders of a semaphore's holders, and of the
// waiting line the count and the oldest arrival, no member.
var statusReadLimits = protocol.ReadLimits{Permits: v1alpha1.MaxStatusHolders}

// holderSnapshots keeps what each store's last batched read found for the
// locks on it, so that a lock's reconcile takes its key's state from memory
// instead of a round trip of its own: the locks on a store cost one
// pipelined round per batchKeys locks per probe interval, not one each.
// A read that finds a key changed since the store's last read (holder,
// fence, held or free) enqueues that key's locks on changed: an idle lock
// on a store is not reconciled again until its key, its store or the lock
// itself changes, or its resync (storeLockResync) is due.
type holderSnapshots struct {
	mu sync.Mutex
	// byStore is keyed by the store's requester name, which a deleted
	// store's reconcile still knows.
	byStore map[string]*holderSnapshot
	changed chan event.GenericEvent
}

// holderSnapshot is one store's batched read.
type holderSnapshot struct {
	// uid is the store incarnation that read: a store re-created under
	// the same name does not serve its predecessor's reads.
	uid types.UID
	at  time.Time
	// reads are the keys read successfully; a key whose read failed is
	// absent, and its lock reads for itself.
	reads map[serverKey]protocol.Holder
	// permits are the keys that hold a semaphore (spec.permits > 1), read
	// only to tell their locks when they change: a semaphore's lock reads
	// its holders for itself.
	permits map[serverKey]permitsRead
}

// permitsRead is what a semaphore's lock shows of its key that changes.
type permitsRead struct {
	held  int
	fence uint64
	// confirmed is a digest of the confirmed holders' identities and fences.
	confirmed string
	// waiting is status.waiting's count and oldest start ("" when the
	// line was not read).
	waiting string
}

func readOfPermits(p protocol.Permits) permitsRead {
	var b strings.Builder
	for _, h := range p.Holders {
		if h.Confirmed {
			fmt.Fprintf(&b, "%s/%d ", h.Identity, h.Fence)
		}
	}
	var waiting string
	if w := lockWaiting(p.Line); w != nil {
		waiting = fmt.Sprintf("%d %v", w.Count, w.OldestSince)
	}
	return permitsRead{held: p.Live, fence: p.Fence, confirmed: b.String(), waiting: waiting}
}

type serverKey struct{ addr, key string }

func newHolderSnapshots() *holderSnapshots {
	return &holderSnapshots{byStore: map[string]*holderSnapshot{}, changed: make(chan event.GenericEvent, 1024)}
}

// put replaces store's snapshot and returns the keys whose state differs
// from the previous snapshot of the same incarnation (keys it did not read
// before, or whose read failed, are not changes: their locks read on
// their own). A key that became a semaphore's, or stopped being one (its
// first permit taken, its last one gone), is a change.
func (s *holderSnapshots) put(store string, snap *holderSnapshot) []serverKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.byStore[store]
	s.byStore[store] = snap
	if prev == nil || prev.uid != snap.uid {
		return nil
	}
	var changed []serverKey
	for k, h := range snap.reads {
		before, ok := prev.reads[k]
		_, wasSemaphore := prev.permits[k]
		if ok && holderMoved(before, h) || wasSemaphore {
			changed = append(changed, k)
		}
	}
	// A semaphore's key reads as a free lock's while nobody holds it.
	for k, p := range snap.permits {
		before, ok := prev.permits[k]
		_, wasRead := prev.reads[k]
		if ok && before != p || wasRead {
			changed = append(changed, k)
		}
	}
	return changed
}

// holderMoved: what a lock's status shows of its key changed (the TTL
// alone is not shown), its waiting line included.
func holderMoved(a, b protocol.Holder) bool {
	return a.Held != b.Held || a.Identity != b.Identity || a.FenceSet != b.FenceSet || a.Fence != b.Fence ||
		!equality.Semantic.DeepEqual(lockWaiting(a.Line), lockWaiting(b.Line))
}

// notify enqueues the reconcile of the locks nns, waiting for room at most
// until ctx ends (a notification lost then shows at the lock's resync).
func (s *holderSnapshots) notify(ctx context.Context, nns []types.NamespacedName) {
	for _, nn := range nns {
		ev := event.GenericEvent{Object: &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}}
		select {
		case s.changed <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// get returns what the snapshot of st says of key on addr, when st's
// incarnation took it at notBefore or later.
func (s *holderSnapshots) get(st *storeSpec, addr, key string, notBefore time.Time) (protocol.Holder, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.byStore[st.requester()]
	if snap == nil || snap.uid != st.uid || snap.at.Before(notBefore) {
		return protocol.Holder{}, false
	}
	h, ok := snap.reads[serverKey{addr, key}]
	return h, ok
}

func (s *holderSnapshots) forget(store string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byStore, store)
}

// snapshotMaxAge is how old a store's snapshot may be for a lock's
// reconcile to use it: the store reads every probe interval, and a lock
// reconcile may come just before the next read.
func (r *DistributedLockReconciler) snapshotMaxAge() time.Duration { return 2 * r.opts.ProbeInterval }

// readLockKeys reads the key of every lock on a Ready store, on the
// server(s) that take each key's writes, in pipelined rounds of batchKeys
// keys, and keeps the result for the locks' reconciles. A server that does
// not answer leaves its keys out: those locks read for themselves.
func (s *StoreReconciler) readLockKeys(ctx context.Context, rd *round, so storeObject) {
	if readyStatus(so.status.Conditions) != "True" {
		s.snapshots.forget(so.spec.requester())
		return
	}
	keysByServer, locksByKey, err := s.lockKeysByServer(ctx, so)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing the locks on the store")
		return
	}
	snap := &holderSnapshot{uid: so.spec.uid, at: s.now(), reads: map[serverKey]protocol.Holder{}, permits: map[serverKey]permitsRead{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for addr, keys := range keysByServer {
		c, err := rd.client(addr, false)
		if err != nil {
			continue
		}
		wg.Go(func() {
			// A read that panics leaves the rest of the server's keys out.
			_ = redisprobe.Recover(ctx, func() error {
				readServerKeys(ctx, c, addr, keys, snap, &mu)
				return nil
			})
		})
	}
	wg.Wait()
	var moved []types.NamespacedName
	for _, k := range s.snapshots.put(so.spec.requester(), snap) {
		moved = append(moved, locksByKey[k.key]...)
	}
	s.snapshots.notify(ctx, moved)
}

// readServerKeys reads keys on the server of c (addr) into snap, locks'
// and semaphores' alike, bounded (values cut to a prefix on the server, at
// most MaxStatusHolders permits each), in one pipelined round per
// batchKeys keys.
func readServerKeys(ctx context.Context, c *redis.Client, addr string, keys []string, snap *holderSnapshot, mu *sync.Mutex) {
	for start := 0; start < len(keys); start += batchKeys {
		chunk := keys[start:min(start+batchKeys, len(keys))]
		reads, errs := protocol.ReadKeys(ctx, protocol.Scripts(c), chunk, statusReadLimits)
		mu.Lock()
		for i, key := range chunk {
			switch {
			case errs[i] != nil:
			case reads[i].Permits != nil: // a semaphore's key
				snap.permits[serverKey{addr, key}] = readOfPermits(*reads[i].Permits)
			default:
				snap.reads[serverKey{addr, key}] = reads[i].Holder
			}
		}
		mu.Unlock()
	}
}

// lockKeysByServer lists the effective keys of the locks on so, grouped by
// the servers that take their writes (the same servers the locks'
// reconciles would read), and the locks of each key.
func (s *StoreReconciler) lockKeysByServer(ctx context.Context, so storeObject) (map[string][]string, map[string][]types.NamespacedName, error) {
	var list v1alpha1.DistributedLockList
	if err := s.kube.List(ctx, &list, client.InNamespace(so.obj.GetNamespace()),
		client.MatchingFields{indexStore: string(s.kind) + "/" + so.obj.GetName()}); err != nil {
		return nil, nil, err
	}
	acl := so.spec.isolation == v1alpha1.IsolationACL
	out := map[string][]string{}
	locks := map[string][]types.NamespacedName{}
	for i := range list.Items {
		dl := &list.Items[i]
		key := dl.EffectiveKey(acl)
		if protocol.ValidateKey(key) != nil {
			continue
		}
		locks[key] = append(locks[key], types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name})
		for _, addr := range keyServers(so.spec, so.status, key) {
			out[addr] = append(out[addr], key)
		}
	}
	return out, locks, nil
}

// keyServers are the servers that take key's writes, as a store's status
// names them: every Redlock node, the master serving the key's slot on a
// Cluster, else the store's master. None when the status names none.
func keyServers(st *storeSpec, status *v1alpha1.LockStoreStatus, key string) []string {
	switch st.redis.Mode {
	case v1alpha1.RedisModeRedlock:
		return st.redis.Addresses
	case v1alpha1.RedisModeCluster:
		slot := protocol.KeySlot(key)
		for _, e := range status.Endpoints {
			if e.Role == v1alpha1.EndpointRoleMaster && slotsContain(e.Slots, slot) {
				return []string{e.Address}
			}
		}
		return nil
	default:
		if status.Master != "" {
			return []string{status.Master}
		}
		return nil
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// errNoConnection is a lock whose status does not say where it lives
// (not Ready yet): it cannot be read, and `get` exits ExitNotReady.
var errNoConnection = fmt.Errorf("%w: its status names no key, connection or credentials Secret yet", kube.ErrNotReady)

// getRow is one lock of `lockctl get`: the object and what Redis says.
type getRow struct {
	dl *v1alpha1.DistributedLock
	// held is nil when Redis could not be read (err says why): no column
	// then claims the lock is free.
	held *holding
	err  error
}

// storeGroup is the locks read in one round: those of one namespace (the
// credentials are the namespace's) published with one connection and one
// credentials Secret.
type storeGroup struct {
	namespace, secret string
	conn              v1alpha1.ConnectionStatus
	rows              []*getRow
}

// groupByStore puts each readable lock in the group of its connection and
// Secret, and marks the others errNoConnection.
func groupByStore(rows []*getRow) []*storeGroup {
	byKey := map[string]*storeGroup{}
	var groups []*storeGroup
	for _, r := range rows {
		st := &r.dl.Status
		if st.Key == "" || st.Connection == nil || st.CredentialsSecretRef == nil || st.CredentialsSecretRef.Name == "" {
			r.err = errNoConnection
			continue
		}
		conn, _ := json.Marshal(st.Connection) // a struct of strings and numbers: it always encodes
		k := r.dl.Namespace + "\x00" + st.CredentialsSecretRef.Name + "\x00" + string(conn)
		g := byKey[k]
		if g == nil {
			g = &storeGroup{namespace: r.dl.Namespace, secret: st.CredentialsSecretRef.Name, conn: *st.Connection}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, r)
	}
	return groups
}

// readGroups reads every group, all at once, each in one pipelined round
// per server (Redlock: per node, in parallel).
func readGroups(ctx context.Context, api client.Reader, groups []*storeGroup) {
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			if err := g.read(ctx, api); err != nil {
				for _, r := range g.rows {
					r.err = err
				}
			}
		})
	}
	wg.Wait()
}

// read reads the group's keys with its Secret's credentials; an error is
// the whole group's.
func (g *storeGroup) read(ctx context.Context, api client.Reader) error {
	var sec corev1.Secret
	if err := api.Get(ctx, types.NamespacedName{Namespace: g.namespace, Name: g.secret}, &sec); err != nil {
		return fmt.Errorf("reading the credentials Secret %s/%s (status.credentialsSecretRef): %w", g.namespace, g.secret, err)
	}
	var tlsOn, insecure bool
	var serverName string
	if t := g.conn.TLS; t != nil {
		tlsOn, serverName, insecure = true, t.ServerName, t.InsecureSkipVerify
	}
	servers, sentinels, err := redisconn.FromSecret(sec.Data, tlsOn, serverName, insecure)
	if err != nil {
		return fmt.Errorf("the credentials Secret %s/%s: %w", g.namespace, g.secret, err)
	}
	clients, err := redisconn.NewUniversal(g.conn, servers, sentinels)
	if err != nil {
		return err
	}
	defer redisconn.CloseAll(clients)
	keys := make([]string, len(g.rows))
	for i, r := range g.rows {
		keys[i] = r.dl.Status.Key
	}
	nodes := make([][]protocol.Read, len(clients))
	errs := make([][]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { nodes[i], errs[i] = readServer(ctx, c, keys) })
	}
	wg.Wait()
	for i, r := range g.rows {
		r.held, r.err = agree(nodes, errs, i, r.dl)
	}
	return nil
}

// readServer is one server's round: every key in one pipeline, the
// waiting lines counted, not listed, the first holders of a semaphore
// (the table names no more; Permits.Live counts them all). The library's functions are called
// where the server has them (a tenant may be refused scripts).
func readServer(ctx context.Context, c redis.UniversalClient, keys []string) ([]protocol.Read, []error) {
	run := protocol.NewCaller(protocol.FunctionsAuto).On(c)
	return protocol.ReadKeys(ctx, run, keys, protocol.ReadLimits{Permits: maxTableHolders})
}

// agree is key i as the servers read it: the one server's read, or for
// Redlock the holder a majority of nodes agrees on, with the highest fence
// (as lock.Locker.Inspect decides).
func agree(nodes [][]protocol.Read, errs [][]error, i int, dl *v1alpha1.DistributedLock) (*holding, error) {
	if len(nodes) == 1 {
		if errs[0][i] != nil {
			return nil, keyless(errs[0][i])
		}
		return holdingOfRead(nodes[0][i], dl), nil
	}
	votes := map[string]int{}
	var highest uint64
	var failed []error
	for n := range nodes {
		if errs[n][i] != nil {
			failed = append(failed, keyless(errs[n][i]))
			continue
		}
		h := nodes[n][i].Holder
		votes[h.Identity]++
		highest = max(highest, h.Fence)
	}
	quorum := len(nodes)/2 + 1
	for n := range nodes {
		if errs[n][i] == nil && votes[nodes[n][i].Holder.Identity] >= quorum {
			read := nodes[n][i]
			read.Holder.Fence, read.Holder.Line = highest, nil // Redlock has no line: a node's is a leftover
			return holdingOfRead(read, dl), nil
		}
	}
	return nil, fmt.Errorf("%w: no %d of the %d nodes agree on the holder: %w", lock.ErrQuorum, quorum, len(nodes), errors.Join(failed...))
}

// keyless is a read's error without the key protocol.ReadKeys names (the
// row names its lock): the locks of a store Redis failed for then share
// one line on stderr.
func keyless(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// holdingOfRead is what a row shows of a read: as status shows it, with
// the holder's pod from status.holder when it names the holder Redis has.
func holdingOfRead(read protocol.Read, dl *v1alpha1.DistributedLock) *holding {
	if p := read.Permits; p != nil {
		h := &holding{Held: p.Live > 0, PermitsHeld: p.Live, Fence: p.Fence, Waiting: lineCount(p.Line)}
		for _, x := range p.Holders {
			h.Holders = append(h.Holders, permitReport{Identity: x.Identity, TTL: x.TTL.String(), Fence: x.Fence, Pending: !x.Confirmed})
		}
		return h
	}
	r := read.Holder
	h := &holding{Held: r.Held, Holder: r.Identity, Shared: r.Shared, Fence: r.Fence, Waiting: lineCount(r.Line)}
	if r.Held {
		h.TTL = r.TTL.String()
		if o := dl.Status.Holder; o != nil && o.Identity == r.Identity {
			h.Pod, h.Node = o.Pod, o.Node
		}
	}
	return h
}

// lineCount is the waiting line's length (nil: not reported).
func lineCount(l *protocol.Line) *waitingReport {
	if l == nil {
		return nil
	}
	return &waitingReport{Count: l.Count}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/pkg/lock"
)

// ErrNotReady reports a DistributedLock a pod cannot use yet: its Ready
// condition is not True (the controller has not resolved it, or a safety
// property it asks for is not in force), its status lacks what pods
// connect with (key, connection, credentialsSecretRef, or the Secret
// itself), or it was deleted after the Locker was made (until it is
// created again). The error names the reason.
var ErrNotReady = errors.New("kube: DistributedLock not ready")

// identity is what makes a DistributedLock the lock it is: the store it
// lives on (spec.storeRef, immutable; empty for an inline lock) and, as
// its status publishes them, the effective key, the mode and db, and where
// the key lives when that is fixed: the Redlock nodes (the quorum is
// counted over them), the Sentinel master name, the Cluster seeds. Two
// bindings of different identities are two locks. It leaves out the
// master of Standalone and Replicated, which moves on a failover and must
// be followed, the sentinels' addresses, and what does not move the lock
// (TTL, credentials, TLS). The store is in so that a lock re-created on
// another store under the same key is not taken for a failover.
type identity struct {
	store      v1alpha1.StoreReference
	key        string
	mode       v1alpha1.RedisMode
	db         int32
	nodes      string // Redlock nodes or Cluster seeds, sorted: order does not matter
	masterName string
}

func identityOf(store *v1alpha1.StoreReference, key string, c *v1alpha1.ConnectionStatus) identity {
	id := identity{key: key, mode: c.Mode, db: c.DB}
	if store != nil {
		id.store = *store
	}
	switch c.Mode {
	case v1alpha1.RedisModeRedlock, v1alpha1.RedisModeCluster:
		id.nodes = strings.Join(slices.Sorted(slices.Values(c.Addresses)), ", ")
	case v1alpha1.RedisModeSentinel:
		id.masterName = c.Sentinel.MasterName
	}
	return id
}

// describe names the key and the servers of a connection, for errors.
func describe(key string, c *v1alpha1.ConnectionStatus) string {
	where := "[" + strings.Join(c.Addresses, ", ") + "]"
	if c.Mode == v1alpha1.RedisModeSentinel {
		where = fmt.Sprintf("Sentinel master %q", c.Sentinel.MasterName)
	}
	return fmt.Sprintf("key %q on %s %s db %d", key, c.Mode, where, c.DB)
}

// target is everything a binding depends on. Two targets with the same
// fingerprint can share one lock.Locker.
type target struct {
	id          identity
	key         string
	conn        v1alpha1.ConnectionStatus
	servers     redisconn.Credentials // their username and password are served by the secretCache
	sentinels   redisconn.Credentials
	ttl         time.Duration
	renew       time.Duration
	maxHold     time.Duration // spec.maxHold; 0: no cap
	fencing     bool
	fifo        bool // spec.fairness FIFO
	tickets     bool // spec.lineOrder Ticket
	replicaAcks int
	permits     int // spec.permits: above 1, a semaphore
	// quarantine is status.failoverQuarantine: the failover quarantine's
	// cutoff when on (nil: off).
	quarantine *time.Duration
}

// resolve turns the resource into a target: the connection from its
// status, the credentials from the Secret the status names (through
// secrets), the lease settings from its spec.
func resolve(ctx context.Context, secrets *credentials, dl *v1alpha1.DistributedLock) (target, error) {
	if err := checkReady(dl); err != nil {
		return target{}, err
	}
	st := &dl.Status
	if err := redisconn.Validate(*st.Connection); err != nil {
		return target{}, fmt.Errorf("%w: %s/%s: status.connection: %w", ErrNotReady, dl.Namespace, dl.Name, err)
	}
	if n := int32(len(st.Connection.Addresses)); st.Connection.Mode == v1alpha1.RedisModeRedlock && st.Quorum != 0 && st.Quorum != n/2+1 { //nolint:gosec // G115: at most 64 addresses
		return target{}, fmt.Errorf("%w: %s/%s: status.quorum %d is not a majority of the %d nodes in status.connection", ErrNotReady, dl.Namespace, dl.Name, st.Quorum, n)
	}
	t := leaseSettings(dl)
	if q := st.FailoverQuarantine; q != nil {
		cutoff := q.Cutoff.Duration
		t.quarantine = &cutoff
	}
	t.key = st.Key
	t.conn = *st.Connection.DeepCopy()
	t.id = identityOf(dl.Spec.StoreRef, t.key, &t.conn)
	var tls tlsParams
	if c := t.conn.TLS; c != nil {
		tls = tlsParams{on: true, serverName: c.ServerName, insecure: c.InsecureSkipVerify}
	}
	var err error
	t.servers, t.sentinels, err = secrets.load(ctx, st.CredentialsSecretRef.Name, tls, credentialsAge(t.ttl))
	if err != nil {
		return target{}, err
	}
	return t, nil
}

// checkReady returns an ErrNotReady error unless the resource's Ready
// condition is True for its current generation and its status holds what
// pods connect with.
func checkReady(dl *v1alpha1.DistributedLock) error {
	ready := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil:
		return fmt.Errorf("%w: %s/%s has no Ready condition yet (is the redlease controller running?)", ErrNotReady, dl.Namespace, dl.Name)
	case ready.Status != metav1.ConditionTrue:
		return fmt.Errorf("%w: %s/%s: %s: %s", ErrNotReady, dl.Namespace, dl.Name, ready.Reason, ready.Message)
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration < dl.Generation:
		return fmt.Errorf("%w: %s/%s: the controller has not yet seen generation %d", ErrNotReady, dl.Namespace, dl.Name, dl.Generation)
	}
	var missing []string
	if dl.Status.Key == "" {
		missing = append(missing, "status.key")
	}
	if dl.Status.Connection == nil {
		missing = append(missing, "status.connection")
	}
	if dl.Status.CredentialsSecretRef == nil || dl.Status.CredentialsSecretRef.Name == "" {
		missing = append(missing, "status.credentialsSecretRef")
	}
	if dl.Spec.FailoverQuarantine() && dl.Status.FailoverQuarantine == nil {
		// Without its cutoff the pods would grant without the quarantine.
		missing = append(missing, "status.failoverQuarantine")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s/%s: Ready, but without %s (a controller that predates them?)", ErrNotReady, dl.Namespace, dl.Name, strings.Join(missing, ", "))
	}
	return nil
}

// leaseSettings returns the lease settings of the spec, with its defaults
// filled in.
func leaseSettings(dl *v1alpha1.DistributedLock) target {
	spec := &dl.Spec
	t := target{ttl: spec.TTLOrDefault(), fencing: spec.FencingEnabled(), fifo: spec.FIFO(), tickets: spec.TicketOrder(), permits: spec.PermitsOrDefault()}
	t.renew = lock.DefaultRenewInterval(t.ttl)
	if spec.RenewInterval != nil {
		t.renew = spec.RenewInterval.Duration
	}
	if spec.MaxHold != nil {
		t.maxHold = spec.MaxHold.Duration
	}
	if spec.Safety != nil {
		t.replicaAcks = int(spec.Safety.WaitForReplicas)
	}
	return t
}

// fingerprint identifies the connection and lease settings. The servers'
// username and password are left out: the secretCache serves them to the
// clients, so a rotation needs no new binding. What go-redis reads only
// when a client is built is in: the TLS material and the sentinels'
// credentials (through a hash).
func (t target) fingerprint() string {
	h := sha256.New()
	// hash.Hash's Write never returns an error, so neither does Fprintf.
	quarantine := "off"
	if t.quarantine != nil {
		quarantine = t.quarantine.String()
	}
	_, _ = fmt.Fprintf(h, "%q|%s|%q|%+v|%d|%s|%s|%v|%v|%v|%v|%d|%v|%v|%d|%s", t.key, t.conn.Mode, t.conn.Addresses, t.conn.Sentinel, t.conn.DB,
		redisconn.Credentials{TLS: t.servers.TLS}.Fingerprint(), t.sentinels.Fingerprint(), t.ttl, t.renew, t.maxHold, t.fencing, t.replicaAcks, t.fifo, t.tickets, t.permits, quarantine)
	return hex.EncodeToString(h.Sum(nil))
}

// storeFingerprint is fingerprint without the key: equal for the
// DistributedLocks of one store with the same lease settings.
func (t target) storeFingerprint() string {
	t.key = ""
	return t.fingerprint()
}

// replicaAckTimeout bounds WAIT: long enough for a healthy replica, short
// against the TTL so a missing replica costs little validity.
func (t target) replicaAckTimeout() time.Duration { return min(t.ttl/5, 2*time.Second) }

// connect builds the lock.Locker for t and the clients it owns; source
// serves the servers' passwords to every new connection.
func (t target) connect(opts []lock.Option, source redisconn.CredentialsSource) (*lock.Locker, []redis.UniversalClient, error) {
	base := []lock.Option{lock.WithTTL(t.ttl), lock.WithRenewInterval(t.renew), lock.WithFencing(t.fencing)}
	if t.replicaAcks > 0 {
		base = append(base, lock.WithReplicaAck(t.replicaAcks, t.replicaAckTimeout()))
	}
	if t.fifo {
		base = append(base, lock.WithFIFO())
	}
	if t.tickets {
		base = append(base, lock.WithTicketOrder())
	}
	if t.maxHold > 0 {
		base = append(base, lock.WithMaxHold(t.maxHold))
	}
	if t.quarantine != nil {
		// The controller wrote the key's epoch record before publishing
		// the cutoff: a record missing now was lost.
		base = append(base, lock.WithFailoverQuarantine(*t.quarantine, lock.MissingEpochWaits))
	}
	opts = append(base, opts...)
	clients, err := redisconn.NewUniversal(t.conn, t.servers, t.sentinels, redisconn.WithCredentialsSource(source))
	if err != nil {
		return nil, nil, err
	}
	var l *lock.Locker
	if t.conn.Mode == v1alpha1.RedisModeRedlock {
		l, err = lock.NewRedlock(clients, opts...)
	} else {
		l, err = lock.New(clients[0], opts...)
	}
	if err != nil {
		redisconn.CloseAll(clients)
		return nil, nil, err
	}
	return l, clients, nil
}

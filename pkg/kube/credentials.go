/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/internal/redisconn"
)

// Bounds of how long a copy of the credentials Secret is used before it is
// read again. The controller drops a rotated password at least 2 × TTL
// after it updated the Secret, so a copy younger than the TTL always holds
// a password the servers still accept; the floor and ceiling keep the API
// calls of short and long TTLs reasonable.
const (
	minCredentialsAge = time.Second
	maxCredentialsAge = 30 * time.Second
	// refreshTimeout bounds a re-read made while a copy exists (for an
	// acquisition or a new Redis connection): past it, they go on with the
	// copy.
	refreshTimeout = 2 * time.Second
)

// credentialsAge is how long a copy of the Secret serves a lock of ttl.
func credentialsAge(ttl time.Duration) time.Duration {
	return min(max(ttl, minCredentialsAge), maxCredentialsAge)
}

// refreshContext bounds a re-read made while a copy exists: the copy serves
// when the API server does not answer, so the read gets refreshTimeout and
// at most half of what is left of ctx, leaving the rest to Redis. An API
// server that accepts connections but never answers then costs an
// acquisition half its time, not all of it.
func refreshContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := refreshTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline)/2)
	}
	return context.WithTimeout(ctx, d)
}

// tlsParams are the parts of status.connection.tls the Secret's TLS keys
// are read with.
type tlsParams struct {
	on         bool
	serverName string
	insecure   bool
}

// secretKey names one parsed copy: a Secret, read with a lock's TLS
// settings (they decide which keys are parsed and how).
type secretKey struct {
	types.NamespacedName
	tls tlsParams
}

// secretCache holds the credentials Secrets of one API client's Lockers
// (see apiClient), as last read. Lockers whose status names the same
// Secret with the same TLS settings (the locks of one store) share one
// copy: it is read at most once per the shortest maxAge among them,
// whatever their number, and parsed once per resourceVersion.
type secretCache struct {
	reader client.Reader

	mu     sync.Mutex
	copies map[secretKey]*secretCopy // never shrinks: bounded by the Secrets the pod may read
}

func newSecretCache(reader client.Reader) *secretCache {
	return &secretCache{reader: reader, copies: map[secretKey]*secretCopy{}}
}

func (c *secretCache) copyOf(k secretKey) *secretCopy {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.copies[k]
	if s == nil {
		s = &secretCopy{key: k}
		c.copies[k] = s
	}
	return s
}

// secretCopy is one Secret as last read and parsed with one set of TLS
// settings.
type secretCopy struct {
	key secretKey

	// mu is held across a read: Lockers needing the copy at the same time
	// wait for one read instead of each making their own.
	mu      sync.Mutex
	rv      string    // the resourceVersion last parsed; "" until read
	readAt  time.Time // last read, or failed attempt to read
	servers redisconn.Credentials
	sents   redisconn.Credentials
}

// load returns the credentials, reading the Secret again unless the copy
// is younger than maxAge. When the read fails for another reason than the
// Secret being gone or forbidden (the API server down), the copy serves
// until maxAge later: Redis, not the API server, is the judge of a
// password.
func (s *secretCopy) load(ctx context.Context, reader client.Reader, maxAge time.Duration) (servers, sentinels redisconn.Credentials, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	have := s.rv != ""
	if !have || time.Since(s.readAt) >= maxAge {
		readCtx, cancel := ctx, context.CancelFunc(func() {})
		if have {
			readCtx, cancel = refreshContext(ctx)
		}
		err := s.readLocked(readCtx, reader)
		cancel()
		if err != nil && (!have || errors.Is(err, ErrNotReady) || apierrors.IsForbidden(err)) {
			return redisconn.Credentials{}, redisconn.Credentials{}, err
		}
		if err != nil {
			s.readAt = time.Now()
		}
	}
	return s.servers, s.sents, nil
}

// serve returns the servers' username and password as last read, read
// again first (bounded by refreshTimeout) when the copy is older than
// maxAge. A failed re-read (API server down, Secret gone) keeps the copy,
// tried again maxAge later: the connection may still succeed, and Redis,
// not this cache, is the judge of a password.
func (s *secretCopy) serve(ctx context.Context, reader client.Reader, maxAge time.Duration) (username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv != "" && time.Since(s.readAt) >= maxAge {
		ctx, cancel := refreshContext(ctx)
		if s.readLocked(ctx, reader) != nil {
			s.readAt = time.Now()
		}
		cancel()
	}
	return s.servers.Username, s.servers.Password
}

// readLocked gets the Secret and parses it if its resourceVersion changed.
// Callers hold s.mu.
func (s *secretCopy) readLocked(ctx context.Context, reader client.Reader) error {
	var sec corev1.Secret
	err := reader.Get(ctx, s.key.NamespacedName, &sec)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the credentials Secret %s that status.credentialsSecretRef names does not exist (yet)", ErrNotReady, s.key.NamespacedName)
	case err != nil:
		return fmt.Errorf("kube: reading the credentials Secret %s (status.credentialsSecretRef; the pod needs get on it): %w", s.key.NamespacedName, err)
	}
	if sec.ResourceVersion != s.rv {
		t := s.key.tls
		servers, sents, err := redisconn.FromSecret(sec.Data, t.on, t.serverName, t.insecure)
		if err != nil {
			return fmt.Errorf("kube: the credentials Secret %s: %w", s.key.NamespacedName, err)
		}
		s.rv, s.servers, s.sents = sec.ResourceVersion, servers, sents
	}
	s.readAt = time.Now()
	return nil
}

// credentials is one Locker's view of the secretCache: the Secret its
// lock's status names, the TLS settings it is read with and how old a copy
// may be, all as of the last acquisition. Its serve is the credentials
// provider of the Locker's clients, so a rotated password is used by the
// next connection of every binding, retired ones included, without a new
// binding: held leases are never moved.
type credentials struct {
	cache     *secretCache
	namespace string

	mu     sync.Mutex
	key    secretKey // as last loaded; empty until then
	maxAge time.Duration
}

func newCredentials(cache *secretCache, namespace string) *credentials {
	return &credentials{cache: cache, namespace: namespace}
}

// load returns the credentials of the Secret name, read as the lock's
// connection says (tls), from the shared copy (see secretCopy.load).
func (c *credentials) load(ctx context.Context, name string, tls tlsParams, maxAge time.Duration) (servers, sentinels redisconn.Credentials, err error) {
	k := secretKey{NamespacedName: types.NamespacedName{Namespace: c.namespace, Name: name}, tls: tls}
	c.mu.Lock()
	c.key, c.maxAge = k, maxAge
	c.mu.Unlock()
	return c.cache.copyOf(k).load(ctx, c.cache.reader, maxAge)
}

// serve is the clients' credentials provider: the servers' username and
// password of the Secret last loaded (see secretCopy.serve).
func (c *credentials) serve(ctx context.Context) (username, password string, err error) {
	c.mu.Lock()
	k, maxAge := c.key, c.maxAge
	c.mu.Unlock()
	if k.Name == "" {
		return "", "", nil
	}
	username, password = c.cache.copyOf(k).serve(ctx, c.cache.reader, maxAge)
	return username, password, nil
}

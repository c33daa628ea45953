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
	// refreshTimeout bounds a re-read on behalf of a new Redis connection:
	// past it, the connection goes on with the copy it has.
	refreshTimeout = 2 * time.Second
)

// credentialsAge is how long a copy of the Secret serves a lock of ttl.
func credentialsAge(ttl time.Duration) time.Duration {
	return min(max(ttl, minCredentialsAge), maxCredentialsAge)
}

// tlsParams are the parts of status.connection.tls the Secret's TLS keys
// are read with.
type tlsParams struct {
	on         bool
	serverName string
	insecure   bool
}

// secretCache holds the credentials Secret the lock's status names, as
// last read: parsed once per resourceVersion, read again when older than
// maxAge. Its passwords reach the clients through their credentials
// provider (serve), so a rotated password is used by the next connection
// of every binding, retired ones included, without a new binding: held
// leases are never moved.
type secretCache struct {
	reader    client.Reader
	namespace string

	mu      sync.Mutex
	name    string // the Secret
	tls     tlsParams
	maxAge  time.Duration
	rv      string    // its resourceVersion as last parsed
	readAt  time.Time // last read, or failed attempt to read
	servers redisconn.Credentials
	sents   redisconn.Credentials
}

// load returns the credentials of the Secret name, read as the lock's
// connection says (tls), reading it again unless the copy held is of the
// same Secret and younger than maxAge. When the read fails for another
// reason than the Secret being gone or forbidden (the API server down), a
// copy of the same Secret and settings serves until maxAge later: Redis,
// not the API server, is the judge of a password.
func (c *secretCache) load(ctx context.Context, name string, tls tlsParams, maxAge time.Duration) (servers, sentinels redisconn.Credentials, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxAge = maxAge
	same := c.rv != "" && name == c.name && tls == c.tls
	if !same || time.Since(c.readAt) >= maxAge {
		err := c.readLocked(ctx, name, tls)
		if err != nil && (!same || errors.Is(err, ErrNotReady) || apierrors.IsForbidden(err)) {
			return redisconn.Credentials{}, redisconn.Credentials{}, err
		}
		if err != nil {
			c.readAt = time.Now()
		}
	}
	return c.servers, c.sents, nil
}

// readLocked gets the Secret and parses it if its resourceVersion, name or
// tls changed. Callers hold c.mu.
func (c *secretCache) readLocked(ctx context.Context, name string, tls tlsParams) error {
	var s corev1.Secret
	err := c.reader.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the credentials Secret %s/%s that status.credentialsSecretRef names does not exist (yet)", ErrNotReady, c.namespace, name)
	case err != nil:
		return fmt.Errorf("kube: reading the credentials Secret %s/%s (status.credentialsSecretRef; the pod needs get on it): %w", c.namespace, name, err)
	}
	if s.ResourceVersion != c.rv || name != c.name || tls != c.tls {
		servers, sents, err := redisconn.FromSecret(s.Data, tls.on, tls.serverName, tls.insecure)
		if err != nil {
			return fmt.Errorf("kube: the credentials Secret %s/%s: %w", c.namespace, name, err)
		}
		c.name, c.tls, c.rv, c.servers, c.sents = name, tls, s.ResourceVersion, servers, sents
	}
	c.readAt = time.Now()
	return nil
}

// serve is the clients' credentials provider: the servers' username and
// password as last read, read again first when the copy is older than the
// lock's maxAge. A failed re-read (API server down, Secret gone) keeps the
// copy, tried again maxAge later: the connection may still succeed, and
// Redis, not this cache, is the judge of a password.
func (c *secretCache) serve(ctx context.Context) (username, password string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rv != "" && time.Since(c.readAt) >= c.maxAge {
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		if c.readLocked(ctx, c.name, c.tls) != nil {
			c.readAt = time.Now()
		}
		cancel()
	}
	return c.servers.Username, c.servers.Password, nil
}

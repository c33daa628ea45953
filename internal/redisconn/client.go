/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlease/redlease/api/v1alpha1"
)

// ErrInvalidConnection reports connection data NewUniversal cannot use.
var ErrInvalidConnection = errors.New("redisconn: invalid connection")

// CredentialsSource returns the username and password for a new
// connection to the servers. go-redis calls it on every connection it
// opens, with the context of the command that needed one.
type CredentialsSource func(ctx context.Context) (username, password string, err error)

// Option adjusts NewUniversal.
type Option func(*options)

type options struct {
	source CredentialsSource
}

// WithCredentialsSource makes every new connection to the servers ask
// source for the username and password, instead of the fixed ones of the
// servers' Credentials (the default): how a rotated password reaches new
// connections of a client that already holds leases. The sentinels'
// credentials stay fixed (go-redis has no source for them).
func WithCredentialsSource(source CredentialsSource) Option {
	return func(o *options) { o.source = source }
}

// NewUniversal builds the clients of one lock's Redis as c describes it:
//   - Standalone, Replicated: one client of addresses[0], the master as
//     the controller published it;
//   - Sentinel: one failover client on the sentinels, which follows
//     failovers itself (sentinels' credentials for the sentinels);
//   - Cluster: one cluster client on the seeds;
//   - Redlock: one client per node, in order.
//
// TLS is on when servers.TLS is set, which must agree with c.TLS (see
// FromSecret); the sentinels are reached with the servers' TLS. Clients
// honour context deadlines (ContextTimeoutEnabled), so a renewal stops
// waiting for a paused server when its lease's validity ends. The caller
// closes the clients.
func NewUniversal(c v1alpha1.ConnectionStatus, servers, sentinels Credentials, opts ...Option) ([]redis.UniversalClient, error) {
	if err := Validate(c); err != nil {
		return nil, err
	}
	if (c.TLS != nil) != (servers.TLS != nil) {
		return nil, fmt.Errorf("%w: the connection's TLS (%t) and the credentials' (%t) disagree", ErrInvalidConnection, c.TLS != nil, servers.TLS != nil)
	}
	o := options{source: fixed(servers)}
	for _, opt := range opts {
		opt(&o)
	}
	b := builder{c: c, servers: servers, sentinels: sentinels, source: o.source}
	switch c.Mode {
	case v1alpha1.RedisModeSentinel:
		return b.sentinel()
	case v1alpha1.RedisModeCluster:
		return b.cluster()
	case v1alpha1.RedisModeRedlock:
		return b.nodes(c.Addresses)
	default: // Standalone, Replicated
		return b.nodes(c.Addresses[:1])
	}
}

// fixed is the default source: the servers' own username and password.
func fixed(servers Credentials) CredentialsSource {
	return func(context.Context) (string, string, error) { return servers.Username, servers.Password, nil }
}

// builder holds what every client of one connection shares.
type builder struct {
	c                  v1alpha1.ConnectionStatus
	servers, sentinels Credentials
	source             CredentialsSource
}

// disabled keeps go-redis from following endpoints a server names in
// maintenance notifications: clients reach only what the connection names.
func disabled() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

func (b builder) nodes(addrs []string) ([]redis.UniversalClient, error) {
	clients := make([]redis.UniversalClient, 0, len(addrs))
	for _, a := range addrs {
		cfg, err := b.servers.TLS.Config(a)
		if err != nil {
			CloseAll(clients)
			return nil, err
		}
		clients = append(clients, redis.NewClient(&redis.Options{
			Addr: a, DB: int(b.c.DB), TLSConfig: cfg, CredentialsProviderContext: b.source,
			ContextTimeoutEnabled: true, MaintNotificationsConfig: disabled(),
		}))
	}
	return clients, nil
}

func (b builder) sentinel() ([]redis.UniversalClient, error) {
	cfg, err := b.servers.TLS.Config("") // the host of each sentinel and master
	if err != nil {
		return nil, err
	}
	return []redis.UniversalClient{redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: b.c.Sentinel.MasterName, SentinelAddrs: b.c.Sentinel.Addresses,
		SentinelUsername: b.sentinels.Username, SentinelPassword: b.sentinels.Password,
		CredentialsProviderContext: b.source, DB: int(b.c.DB), TLSConfig: cfg,
		ContextTimeoutEnabled: true,
	})}, nil
}

func (b builder) cluster() ([]redis.UniversalClient, error) {
	cfg, err := b.servers.TLS.Config("") // the host of each node, seeds and those CLUSTER SLOTS names
	if err != nil {
		return nil, err
	}
	return []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: b.c.Addresses, TLSConfig: cfg, CredentialsProviderContext: b.source,
		ContextTimeoutEnabled: true, MaintNotificationsConfig: disabled(),
	})}, nil
}

// CloseAll closes clients; their errors are dropped: closing a client only
// releases its connections.
func CloseAll(clients []redis.UniversalClient) {
	for _, c := range clients {
		_ = c.Close()
	}
}

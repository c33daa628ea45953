/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package redisconn is the one place that turns a lock's connection data
// (status.connection of a DistributedLock, or a redis:// URL) and its
// credentials (the credentials Secret the controller writes) into go-redis
// clients. pkg/kube and lockctl build their clients here, and the
// controller's redisprobe shares its Credentials and TLS types.
//
// Passwords reach the servers through go-redis's CredentialsProviderContext:
// every new connection asks for the current username and password, so a
// rotated password is used by the next connection without rebuilding the
// client, and the leases a client holds are never moved to another one
// (TestCredentialsSourceReachesNewConnections; in pkg/kube,
// TestPasswordRotationKeepsHeldLeases).
// Connections already open stay authenticated with the password they
// started with until they close (Redis checks a password only at AUTH).
package redisconn

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package redisacl manages the Redis ACL users that isolate the tenants of a
// lock store (DESIGN §10, isolation: ACL): it creates or replaces a user in
// one ACL SETUSER, lists, deletes and prunes users by prefix, and makes and
// hashes passwords. It talks to one node at a time through a *redis.Client
// with the controller's credentials; what a tenant may run comes from
// protocol.TenantACLRules.
//
// Passwords reach Redis only as SHA-256 hashes ("#<hex>"), so a rotation can
// keep accepting the previous password for a grace period without the
// controller keeping it in clear text.
//
// What ACL isolation does not cover:
//
//   - Sentinels. A tenant's pods reach the Sentinels with the credentials the
//     store gives them; Sentinel has its own users, which this package does
//     not manage. Sentinels hold no lock data, but any client able to talk to
//     them sees the topology and can run what their users allow.
//   - Open connections. Redis checks a password when a connection
//     authenticates, never again: a connection opened with a password that a
//     rotation has since dropped keeps working until it is closed (deleting
//     the user, by contrast, disconnects its clients; TestRotation). Rotating a leaked
//     password therefore does not cut off a client already connected with it.
//   - Replication. ACL users are not replicated: every node (master, each
//     replica, each Cluster node) must be provisioned, or a tenant is refused
//     by the replica promoted after a failover.
//   - Restarts. Without an aclfile a restarted node has forgotten every user
//     until the controller provisions it again (it does so when a node's
//     run_id changes); until then the tenant's clients get WRONGPASS.
//   - Redis before 6.2, which has no channel rules (&): every user may use
//     every channel. Provision fails there with ErrACLUnavailable.
package redisacl

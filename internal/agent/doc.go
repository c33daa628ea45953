/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package agent serves the pod-local lock API (api/proto/redlease/lock/v1)
// that `lockctl agent` runs: gRPC, gRPC-Web and HTTP/JSON from one Connect
// handler, on a Unix socket by default.
//
// The agent is a pkg/lock client like any Go pod. Every grant is a
// pkg/lock lease: the fence it reports is the lease's, and the validity it
// reports is the lease's local deadline measured when the reply is written,
// never past it. The lock value (the ownership proof in Redis) and the Redis
// credentials never leave the process: a unary lease is named by a random
// handle only this agent knows.
//
// Two ways to hold:
//   - Acquire streams: the lease lives while the stream is open. A client
//     that closes it or dies (its connection closes) releases the lock at
//     once, without waiting for the TTL.
//   - TryAcquireLease/AcquireLease return a handle: the lease lives while
//     KeepAlive calls arrive within the period the client chose. With none
//     for that period the agent releases the lease, so a hung client loses
//     it within its own period; a client that then writes under it is
//     refused by its fence.
//
// What is not guaranteed: the agent cannot stop a client that goes on
// working after its lease ended. A stream's loss message and a failed
// KeepAlive tell it; fences make its late writes harmless where the store
// checks them. An agent that is killed takes its clients' leases with it:
// the streams break, the handles are unknown to the next agent, and the keys
// stay until their TTL runs out (the agent releases what it can on an
// orderly stop).
package agent

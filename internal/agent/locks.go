/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// Lock is an opened lock: a DistributedLock through pkg/kube, or a key (a
// mutex or a semaphore) through pkg/lock.
type Lock interface {
	Key() string
	// TTL is the leases' time to live in Redis.
	TTL() time.Duration
	Acquire(ctx context.Context) (*lock.Lease, error)
	TryAcquire(ctx context.Context) (*lock.Lease, error)
	// Inspect reads who holds the lock and who waits.
	Inspect(ctx context.Context) (Holding, error)
}

// Holding is what Redis says about a lock, without any lock value.
type Holding struct {
	Key     string
	Holders []lock.PermitHolder // a lock's holder has Fence 0: see Fence
	Fence   uint64
	Waiting *lock.Waiting // nil when the server did not report the line
}

// Locks opens the locks requests name. Open returns the same Lock for the
// same name and permits; errors from the Kubernetes API (NotFound,
// Forbidden) come as they are, so that the agent can answer with them.
type Locks interface {
	Open(ctx context.Context, name string, permits int) (Lock, error)
}

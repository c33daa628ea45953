/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Servers name other servers (a master its replicas, Sentinels a master's
// replicas, a Cluster its nodes), and a tenant can run a server that names
// thousands: the controller would dial them all, every probe interval,
// keeping a client each, and scan the networks it may reach for the
// tenant. These bound what one lock or store costs.
const (
	// maxDiscovered is the most endpoints one lock or store may have, named
	// or discovered: a Cluster of 256 shards with a replica each. Beyond it
	// the object is not Ready (TooManyEndpoints).
	maxDiscovered = 512
	// probesPerRound is the most probes one round runs at once.
	probesPerRound = 32
	// probesPerProcess is the most probes the manager runs at once, over
	// every round.
	probesPerProcess = 256
)

// tooManyEndpoints fails the round, naming the count, when n endpoints
// are more than maxDiscovered.
func (rd *round) tooManyEndpoints(n int, where string) bool {
	if n <= maxDiscovered {
		return false
	}
	rd.fail(v1alpha1.ReasonTooManyEndpoints, fmt.Sprintf("%s: %d endpoints, more than the %d the controller probes for one lock or store", where, n, maxDiscovered))
	return true
}

// probeSlots bounds the probes in flight in the process.
type probeSlots chan struct{}

// take waits for a slot until ctx ends.
func (s probeSlots) take(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s probeSlots) give() { <-s }

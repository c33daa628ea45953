/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"fmt"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Validate checks that c says where every client of its mode connects:
// addresses for Standalone, Replicated (the master first), Cluster (the
// seeds) and Redlock (the nodes, an odd number of at least 3: the quorum
// is counted over them), a master name and sentinels for Sentinel, and
// database 0 for Cluster. Errors wrap ErrInvalidConnection.
func Validate(c v1alpha1.ConnectionStatus) error {
	switch c.Mode {
	case v1alpha1.RedisModeStandalone, v1alpha1.RedisModeReplicated:
		if len(c.Addresses) == 0 {
			return fmt.Errorf("%w: %s mode without the master's address", ErrInvalidConnection, c.Mode)
		}
	case v1alpha1.RedisModeSentinel:
		if c.Sentinel == nil || c.Sentinel.MasterName == "" || len(c.Sentinel.Addresses) == 0 {
			return fmt.Errorf("%w: Sentinel mode needs a master name and the sentinels' addresses", ErrInvalidConnection)
		}
	case v1alpha1.RedisModeCluster:
		if len(c.Addresses) == 0 {
			return fmt.Errorf("%w: Cluster mode without seed addresses", ErrInvalidConnection)
		}
		if c.DB != 0 {
			return fmt.Errorf("%w: Redis Cluster has only database 0, not %d", ErrInvalidConnection, c.DB)
		}
	case v1alpha1.RedisModeRedlock:
		if n := len(c.Addresses); n < 3 || n%2 == 0 {
			return fmt.Errorf("%w: Redlock needs an odd number (3, 5, 7...) of nodes, got %d", ErrInvalidConnection, n)
		}
	default:
		return fmt.Errorf("%w: unknown mode %q", ErrInvalidConnection, c.Mode)
	}
	return nil
}

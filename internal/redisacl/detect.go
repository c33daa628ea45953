/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// DetectOptions returns opts with the fields that depend on the server
// filled from what c's node knows: an ACL rule naming a command the server
// lacks fails the whole ACL SETUSER, and one missing a command the server
// has (and go-redis sends) fills ACL LOG. It asks COMMAND INFO rather than
// parsing versions, so a backport or a fork answers for itself.
func DetectOptions(ctx context.Context, c *redis.Client, opts protocol.ACLOptions) (protocol.ACLOptions, error) {
	// One reply per name, null for a command the server does not have.
	infos, err := c.Do(ctx, "command", "info", "spublish", "client|setinfo", "fcall").Slice()
	if err != nil {
		return opts, fmt.Errorf("redisacl: COMMAND INFO on %s: %w", c.Options().Addr, classify(err))
	}
	if len(infos) != 3 {
		return opts, fmt.Errorf("redisacl: COMMAND INFO on %s: %d replies for 3 commands", c.Options().Addr, len(infos))
	}
	opts.ShardedPubSub = infos[0] != nil
	opts.ClientSetInfo = infos[1] != nil
	opts.Functions = infos[2] != nil
	return opts, nil
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
)

// ErrClientPanicked is returned, wrapped, by Recover for work that
// panicked: a server's reply the client could not handle.
var ErrClientPanicked = errors.New("redisprobe: the client failed on the server's reply")

// Recover runs f, which talks to a server, and turns a panic into an error
// wrapping ErrClientPanicked, logged with its stack. The controller runs
// Redis calls in goroutines of its own, outside controller-runtime's
// recovery, where a panic would end the manager for every tenant.
func Recover(ctx context.Context, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", ErrClientPanicked, v)
			logr.FromContextOrDiscard(ctx).Error(err, "recovered from a panic in a Redis call", "stack", string(debug.Stack()))
		}
	}()
	return f()
}

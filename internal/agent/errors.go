/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// ErrBadName marks a lock name a Locks cannot open as written (the client's
// mistake: INVALID_ARGUMENT).
var ErrBadName = errors.New("bad lock name")

// errLeaseUnknown answers a handle this agent never gave or has forgotten.
var errLeaseUnknown = errors.New("no such lease: the handle is unknown to this agent (a restarted agent forgets every handle)")

// codeOf chooses the gRPC code a client sees for err (the service comment
// in lock.proto lists them). unavailable says whether err means Redis could
// not be reached, did not answer or refused; ranOut says the request's own
// wait ran out.
func codeOf(err error, unavailable func(error) bool, ranOut bool) connect.Code {
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		return connect.CodeAborted
	case errors.Is(err, kube.ErrNotReady), errors.Is(err, lock.ErrLeaseLost), errors.Is(err, lock.ErrReleased):
		return connect.CodeFailedPrecondition
	case errors.Is(err, ErrBadName), errors.Is(err, lock.ErrInvalidConfig):
		return connect.CodeInvalidArgument
	case errors.As(err, &status):
		return apiCode(err)
	case unavailable(err):
		return connect.CodeUnavailable
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	case ranOut || errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeInternal
}

// apiCode passes the Kubernetes API's answer on: a lock that does not exist,
// or one the pod's ServiceAccount may not read.
func apiCode(err error) connect.Code {
	switch {
	case apierrors.IsNotFound(err):
		return connect.CodeNotFound
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return connect.CodePermissionDenied
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err):
		return connect.CodeInvalidArgument
	}
	return connect.CodeUnavailable
}

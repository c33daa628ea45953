/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/pkg/lock"
)

// Acquire holds the lock while the stream is open (see lock.proto).
func (s *Server) Acquire(ctx context.Context, req *connect.Request[lockv1.AcquireRequest], stream *connect.ServerStream[lockv1.AcquireResponse]) error {
	l, err := s.open(ctx, req.Msg.GetLock())
	if err != nil {
		return err
	}
	lease, err := s.take(ctx, l, false, req.Msg.GetWait())
	if err != nil {
		return err
	}
	// However the stream ends — the client closed it or died, the agent
	// stops, the lease was lost — the lock is given back now, not at TTL.
	defer func() { _ = release(lease) }()
	if err := stream.Send(&lockv1.AcquireResponse{Event: &lockv1.AcquireResponse_Granted{Granted: grant(l, lease)}}); err != nil {
		return err
	}
	return s.watch(ctx, l.TTL(), lease, stream)
}

// watch reports lease's renewals on stream until the client goes, the
// agent stops or the lease ends.
func (s *Server) watch(ctx context.Context, ttl time.Duration, lease *lock.Lease, stream *connect.ServerStream[lockv1.AcquireResponse]) error {
	tick := time.NewTicker(reportEvery(ttl))
	defer tick.Stop()
	last, late := lease.ValidUntil(), false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.stopping.Done():
			return s.lost(stream, "closed", errors.New("the agent is stopping: the lease is released"))
		case <-lease.Done():
			return s.lost(stream, lossReason(lease.Err()), lease.Err())
		case <-tick.C:
			r, changed := renewal(lease, ttl, &last, &late)
			if !changed {
				continue
			}
			if err := stream.Send(&lockv1.AcquireResponse{Event: &lockv1.AcquireResponse_Renewal{Renewal: r}}); err != nil {
				return err
			}
		}
	}
}

// reportEvery is how often a stream looks at its lease's validity: often
// enough that a late renewal is reported well before the lease ends.
func reportEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 50*time.Millisecond), time.Second)
}

// renewal is the message to send when the lease's deadline moved since
// *last (a renewal) or a renewal became late (less than a third of the TTL
// left); changed is false when there is nothing new to say.
func renewal(lease *lock.Lease, ttl time.Duration, last *time.Time, late *bool) (r *lockv1.Renewal, changed bool) {
	until, left := lease.ValidUntil(), validFor(lease)
	isLate := left < ttl/3
	if until.Equal(*last) && isLate == *late {
		return nil, false
	}
	*last, *late = until, isLate
	return &lockv1.Renewal{ValidFor: durationpb.New(left), Late: isLate}, true
}

// lost tells the client its lease ended, and ends the stream with
// FAILED_PRECONDITION.
func (s *Server) lost(stream *connect.ServerStream[lockv1.AcquireResponse], reason string, cause error) error {
	_ = stream.Send(&lockv1.AcquireResponse{Event: &lockv1.AcquireResponse_Lost{Lost: &lockv1.Loss{Reason: reason, Message: cause.Error()}}})
	return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("lease lost (%s): %w", reason, cause))
}

// lossReason names why a lease ended without its client asking.
func lossReason(err error) string {
	switch {
	case errors.Is(err, lock.ErrMaxHoldExceeded):
		return "max_hold"
	case errors.Is(err, lock.ErrReleased), errors.Is(err, lock.ErrClosed):
		return "closed"
	}
	return "lost"
}

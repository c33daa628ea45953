/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
)

// TryAcquireLease makes one attempt and returns a handle (see lock.proto).
func (s *Server) TryAcquireLease(ctx context.Context, req *connect.Request[lockv1.TryAcquireLeaseRequest]) (*connect.Response[lockv1.TryAcquireLeaseResponse], error) {
	id, g, err := s.lease(ctx, req.Msg.GetLock(), req.Msg.GetKeepAlivePeriod(), true, nil)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&lockv1.TryAcquireLeaseResponse{LeaseId: id, Grant: g}), nil
}

// AcquireLease waits for the lock and returns a handle (see lock.proto).
func (s *Server) AcquireLease(ctx context.Context, req *connect.Request[lockv1.AcquireLeaseRequest]) (*connect.Response[lockv1.AcquireLeaseResponse], error) {
	id, g, err := s.lease(ctx, req.Msg.GetLock(), req.Msg.GetKeepAlivePeriod(), false, req.Msg.GetWait())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&lockv1.AcquireLeaseResponse{LeaseId: id, Grant: g}), nil
}

// lease takes a unary lease kept alive by keep-alives within period.
func (s *Server) lease(ctx context.Context, ref *lockv1.LockRef, period *durationpb.Duration, try bool, wait *durationpb.Duration) (string, *lockv1.Grant, error) {
	if err := checkPeriod(period); err != nil {
		return "", nil, err
	}
	l, err := s.open(ctx, ref)
	if err != nil {
		return "", nil, err
	}
	lease, err := s.take(ctx, l, try, wait)
	if err != nil {
		return "", nil, err
	}
	if ctx.Err() != nil { // the client left while the grant came in
		_ = release(lease)
		return "", nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	return s.leases.add(lease, period.AsDuration()), grant(l, lease), nil
}

// checkPeriod refuses a missing keep-alive period or one outside
// [MinKeepAlivePeriod, MaxKeepAlivePeriod].
func checkPeriod(p *durationpb.Duration) error {
	switch {
	case p == nil:
		return connect.NewError(connect.CodeInvalidArgument, errors.New("keep_alive_period is required: how long the lease lives without a KeepAlive"))
	case p.CheckValid() != nil || p.AsDuration() < MinKeepAlivePeriod || p.AsDuration() > MaxKeepAlivePeriod:
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("keep_alive_period %v: want %v to %v", p.AsDuration(), MinKeepAlivePeriod, MaxKeepAlivePeriod))
	}
	return nil
}

// KeepAlive keeps a unary lease alive (see lock.proto).
func (s *Server) KeepAlive(_ context.Context, req *connect.Request[lockv1.KeepAliveRequest]) (*connect.Response[lockv1.KeepAliveResponse], error) {
	h, err := s.leases.keepAlive(req.Msg.GetLeaseId())
	if err != nil {
		return nil, s.handleError(err)
	}
	left := validFor(h.lease)
	if left <= 0 { // ended between the two looks
		return nil, s.handleError(h.lease.Err())
	}
	return connect.NewResponse(&lockv1.KeepAliveResponse{ValidFor: durationpb.New(left), Fence: h.lease.Fence()}), nil
}

// Release gives a unary lease back (see lock.proto).
func (s *Server) Release(ctx context.Context, req *connect.Request[lockv1.ReleaseRequest]) (*connect.Response[lockv1.ReleaseResponse], error) {
	h, err := s.leases.remove(req.Msg.GetLeaseId())
	if err != nil {
		return nil, s.handleError(err)
	}
	if err := h.lease.Release(ctx); err != nil {
		return nil, s.fail(err, false)
	}
	return connect.NewResponse(&lockv1.ReleaseResponse{}), nil
}

// handleError answers a KeepAlive or Release whose handle names no held
// lease: unknown, or ended (lost, released, no keep-alive in time).
func (s *Server) handleError(err error) error {
	if errors.Is(err, errLeaseUnknown) {
		return connect.NewError(connect.CodeNotFound, err)
	}
	return connect.NewError(connect.CodeFailedPrecondition, err)
}

// Get reads the lock's holders and waiters (see lock.proto).
func (s *Server) Get(ctx context.Context, req *connect.Request[lockv1.GetRequest]) (*connect.Response[lockv1.GetResponse], error) {
	l, err := s.open(ctx, req.Msg.GetLock())
	if err != nil {
		return nil, err
	}
	h, err := l.Inspect(ctx)
	if err != nil {
		return nil, s.fail(err, false)
	}
	return connect.NewResponse(describe(h)), nil
}

// describe is Get's reply: identities, fences and TTLs, never a value.
func describe(h Holding) *lockv1.GetResponse {
	r := &lockv1.GetResponse{Key: h.Key, Fence: h.Fence}
	for _, x := range h.Holders {
		r.Holders = append(r.Holders, &lockv1.Holder{Identity: x.Identity, Fence: x.Fence, Ttl: durationpb.New(x.TTL)})
	}
	if w := h.Waiting; w != nil {
		r.Waiting = int32(min(w.Count, 1<<31-1)) //nolint:gosec // G115: clamped
		for _, x := range w.Waiters {
			r.Waiters = append(r.Waiters, x.Identity)
		}
	}
	return r
}

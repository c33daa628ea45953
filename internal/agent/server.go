/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
	"github.com/redlease/redlease/pkg/lock"
)

// MaxRequestBytes bounds a request: every valid one is far smaller, so a
// larger one is refused (RESOURCE_EXHAUSTED) before it is decoded.
const MaxRequestBytes = 16 << 10

// compressMinBytes is the smallest reply the agent compresses, when the
// client accepts it: larger than any reply it writes.
const compressMinBytes = 4 << 10

// ReleaseTimeout bounds a release made on someone else's behalf: the
// agent's for a client, lockctl's for the command it wrapped. Past it the
// key expires with its TTL.
const ReleaseTimeout = 5 * time.Second

// The keep-alive periods a client may choose: shorter ones would make a
// busy client lose its lease to its own scheduling, longer ones leave a hung
// client's lock held for too long.
const (
	MinKeepAlivePeriod = time.Second
	MaxKeepAlivePeriod = time.Hour
)

// Options tune a Server.
type Options struct {
	// Unavailable reports whether an error means Redis could not be
	// reached, did not answer or refused (UNAVAILABLE to the client).
	// Default: never.
	Unavailable func(error) bool
	// Logger logs leases the agent ends on a client's behalf. Default: none.
	Logger logr.Logger
	// DaprStore, when set, serves Dapr's lock routes (/v1.0-alpha1/lock/
	// and /unlock/) for the lock store of that name. Default: not served.
	DaprStore string
}

// Server implements the LockService.
type Server struct {
	locks       Locks
	unavailable func(error) bool
	log         logr.Logger
	leases      *leaseTable
	daprStore   string
	// stopping is done when the agent stops: streams end with a loss
	// ("closed") rather than waiting for their clients.
	stopping context.Context
	stop     context.CancelFunc
}

var _ lockv1connect.LockServiceHandler = (*Server)(nil)

// NewServer serves locks; Close releases what it still holds.
func NewServer(locks Locks, opts Options) *Server {
	if opts.Unavailable == nil {
		opts.Unavailable = func(error) bool { return false }
	}
	stopping, stop := context.WithCancel(context.Background())
	return &Server{locks: locks, unavailable: opts.Unavailable, log: opts.Logger, leases: newLeaseTable(opts.Logger), daprStore: opts.DaprStore, stopping: stopping, stop: stop}
}

// Handler serves the API (gRPC, gRPC-Web, Connect's HTTP/JSON from one
// handler), Dapr's lock routes when Options.DaprStore asked for them, and
// GET /livez.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// Replies are ~100 bytes: compressing them for a client that accepts
	// gzip (Connect's Go client does by default) cost the agent ~9 % of its
	// CPU (docs/benchmarks.md) and saves nothing on a Unix socket.
	mux.Handle(lockv1connect.NewLockServiceHandler(s, connect.WithReadMaxBytes(MaxRequestBytes), connect.WithCompressMinBytes(compressMinBytes)))
	if s.daprStore != "" {
		s.registerDapr(mux, s.daprStore)
	}
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// Close ends every stream and releases every lease the agent holds.
func (s *Server) Close() {
	s.stop()
	s.leases.releaseAll()
}

// open validates ref and opens its lock.
func (s *Server) open(ctx context.Context, ref *lockv1.LockRef) (Lock, error) {
	if ref.GetName() == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("lock.name is required"))
	}
	permits := int(ref.GetPermits())
	if permits == 0 {
		permits = 1
	}
	if permits < 1 || permits > lock.MaxPermits {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("lock.permits %d: want 1 to %d", ref.GetPermits(), lock.MaxPermits))
	}
	l, err := s.locks.Open(ctx, ref.GetName(), permits)
	if err != nil {
		return nil, s.fail(fmt.Errorf("lock %q: %w", ref.GetName(), err), false)
	}
	return l, nil
}

// fail turns err into the client's error (see codeOf).
func (s *Server) fail(err error, ranOut bool) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	return connect.NewError(codeOf(err, s.unavailable, ranOut), err)
}

// take acquires l: one attempt when try, else a wait bounded by wait (nil:
// by ctx alone).
func (s *Server) take(ctx context.Context, l Lock, try bool, wait *durationpb.Duration) (*lock.Lease, error) {
	if try {
		lease, err := l.TryAcquire(ctx)
		return lease, s.failIf(err, false)
	}
	if wait != nil {
		if err := wait.CheckValid(); err != nil || wait.AsDuration() < 0 {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("wait %v: want a duration of 0 or more", wait.AsDuration()))
		}
		if wait.AsDuration() == 0 {
			return s.take(ctx, l, true, nil)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait.AsDuration())
		defer cancel()
	}
	lease, err := l.Acquire(ctx)
	return lease, s.failIf(err, errors.Is(ctx.Err(), context.DeadlineExceeded))
}

func (s *Server) failIf(err error, ranOut bool) error {
	if err == nil {
		return nil
	}
	return s.fail(err, ranOut)
}

// grant describes lease as the client sees it: never the value.
func grant(l Lock, lease *lock.Lease) *lockv1.Grant {
	return &lockv1.Grant{
		Key:      lease.Key(),
		Fence:    lease.Fence(),
		ValidFor: durationpb.New(validFor(lease)),
		Ttl:      durationpb.New(l.TTL()),
		Holder:   lease.Identity(),
	}
}

// validFor is how long lease is valid from now; 0 once it ended, so that a
// reply never reports a lease held past the library's deadline.
func validFor(lease *lock.Lease) time.Duration {
	if lease.Err() != nil {
		return 0
	}
	return max(time.Until(lease.ValidUntil()), 0)
}

// release gives lease back on the client's behalf, within ReleaseTimeout.
func release(lease *lock.Lease) error {
	ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
	defer cancel()
	return lease.Release(ctx)
}

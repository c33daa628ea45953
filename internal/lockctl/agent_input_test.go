/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// badCall is one request the agent must refuse with code, holding nothing.
type badCall struct {
	name string
	call func(context.Context, lockv1connect.LockServiceClient) error
	code connect.Code
}

func try(name string, period *durationpb.Duration, permits int32) func(context.Context, lockv1connect.LockServiceClient) error {
	return func(ctx context.Context, c lockv1connect.LockServiceClient) error {
		_, err := c.TryAcquireLease(ctx, connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: &lockv1.LockRef{Name: name, Permits: permits}, KeepAlivePeriod: period}))
		return err
	}
}

func badCalls() []badCall {
	second := durationpb.New(time.Second)
	return []badCall{
		{"no lock name", try("", second, 0), connect.CodeInvalidArgument},
		{"a key with a space", try("a b", second, 0), connect.CodeInvalidArgument},
		{"a key with a } outside a hash tag", try("a}b", second, 0), connect.CodeInvalidArgument},
		{"no keep-alive period", try("k", nil, 0), connect.CodeInvalidArgument},
		{"a zero keep-alive period", try("k", durationpb.New(0), 0), connect.CodeInvalidArgument},
		{"a negative keep-alive period", try("k", durationpb.New(-time.Second), 0), connect.CodeInvalidArgument},
		{"a keep-alive period above an hour", try("k", durationpb.New(2*time.Hour), 0), connect.CodeInvalidArgument},
		{"negative permits", try("k", second, -1), connect.CodeInvalidArgument},
		{"too many permits", try("k", second, lock.MaxPermits+1), connect.CodeInvalidArgument},
		{"an oversized request", try(strings.Repeat("k", 20<<10), second, 0), connect.CodeResourceExhausted},
		{"a negative wait", func(ctx context.Context, c lockv1connect.LockServiceClient) error {
			_, err := c.AcquireLease(ctx, connect.NewRequest(&lockv1.AcquireLeaseRequest{Lock: ref("k"), KeepAlivePeriod: second, Wait: durationpb.New(-time.Second)}))
			return err
		}, connect.CodeInvalidArgument},
		{"a keep-alive for an unknown lease", func(ctx context.Context, c lockv1connect.LockServiceClient) error {
			_, err := c.KeepAlive(ctx, connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: "0123456789abcdef0123456789abcdef"}))
			return err
		}, connect.CodeNotFound},
		{"a release of an unknown lease", func(ctx context.Context, c lockv1connect.LockServiceClient) error {
			_, err := c.Release(ctx, connect.NewRequest(&lockv1.ReleaseRequest{}))
			return err
		}, connect.CodeNotFound},
	}
}

// Bad input gets a clear code on both protocols, and nothing is held or
// queued in Redis afterwards.
func TestAgentRefusesBadInputAndHoldsNothing(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv))
	for _, grpc := range []bool{false, true} {
		c := a.client(grpc)
		for _, tt := range badCalls() {
			if err := tt.call(t.Context(), c); connect.CodeOf(err) != tt.code || err.Error() == "" {
				t.Errorf("%s (gRPC %v): %v, want %v", tt.name, grpc, err, tt.code)
			}
		}
	}
	if n := srv.Client(t).DBSize(t.Context()).Val(); n != 0 {
		t.Fatalf("%d keys in Redis after refused requests: %v", n, srv.Client(t).Keys(t.Context(), "*").Val())
	}
}

// A held lock is ABORTED (409 over HTTP), at once or when the wait runs
// out; a released lease's handle says it was released.
func TestAgentHeldAndReleased(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv))
	other := locktest.New(t, srv.Client(t), lock.WithTTL(30*time.Second))
	held, err := other.TryAcquire(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, held)
	c := a.client(false)
	period := durationpb.New(time.Minute)
	_, err = c.TryAcquireLease(t.Context(), connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: ref("held"), KeepAlivePeriod: period}))
	if connect.CodeOf(err) != connect.CodeAborted {
		t.Fatalf("a held lock: %v, want ABORTED", err)
	}
	_, err = c.AcquireLease(t.Context(), connect.NewRequest(&lockv1.AcquireLeaseRequest{Lock: ref("held"), KeepAlivePeriod: period, Wait: durationpb.New(300 * time.Millisecond)}))
	if connect.CodeOf(err) != connect.CodeAborted {
		t.Fatalf("a held lock, wait ran out: %v, want ABORTED", err)
	}

	res, err := c.TryAcquireLease(t.Context(), connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: ref("free"), KeepAlivePeriod: period}))
	if err != nil {
		t.Fatal(err)
	}
	release := connect.NewRequest(&lockv1.ReleaseRequest{LeaseId: res.Msg.GetLeaseId()})
	if _, err := c.Release(t.Context(), release); err != nil {
		t.Fatal(err)
	}
	if srv.Client(t).Exists(t.Context(), "free").Val() != 0 {
		t.Fatal("Release left the key")
	}
	for _, call := range []func() error{
		func() error { _, err := c.Release(t.Context(), release); return err },
		func() error {
			_, err := c.KeepAlive(t.Context(), connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: res.Msg.GetLeaseId()}))
			return err
		},
	} {
		if err := call(); connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "released by its client") {
			t.Fatalf("a released handle: %v, want FAILED_PRECONDITION saying it was released", err)
		}
	}
}

// --listen takes loopback addresses only: the API grants locks to whoever
// reaches it.
func TestAgentListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:7070"} {
		if r := lockctl(t, "agent", "--socket", "", "--listen", addr, "--redis", "redis://127.0.0.1:1"); r.code != 2 || !strings.Contains(r.stderr, "only a loopback address") {
			t.Errorf("--listen %s: exit %d, stderr %q; want 2 naming loopback", addr, r.code, r.stderr)
		}
	}
}

// --procs refuses a negative count before the agent serves anything.
func TestAgentRefusesNegativeProcs(t *testing.T) {
	if r := lockctl(t, "agent", "--socket", "", "--listen", "127.0.0.1:0", "--procs", "-1", "--redis", "redis://127.0.0.1:1"); r.code != 2 || !strings.Contains(r.stderr, "--procs -1") {
		t.Errorf("--procs -1: exit %d, stderr %q; want 2 naming the flag", r.code, r.stderr)
	}
}

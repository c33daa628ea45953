/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
)

// agentProcess is a `lockctl agent` the test started, serving on socket.
type agentProcess struct {
	cmd    *exec.Cmd
	socket string
	stderr *syncBuffer
	exited chan struct{}
}

// startAgent runs `lockctl agent args... --socket <temp>` and waits until
// it answers; the test's end stops it (SIGTERM, then SIGKILL).
func startAgent(t *testing.T, args ...string) *agentProcess {
	t.Helper()
	a := &agentProcess{socket: filepath.Join(t.TempDir(), "agent.sock"), stderr: &syncBuffer{}, exited: make(chan struct{})}
	a.cmd = program(context.Background(), binary, append([]string{"agent", "--socket", a.socket}, args...)...)
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }() // the exit status is read from ProcessState
	t.Cleanup(func() { a.stop(t, syscall.SIGTERM) })
	locktest.WaitFor(t, 10*time.Second, "the agent's socket", func() bool {
		var d net.Dialer
		c, err := d.DialContext(t.Context(), "unix", a.socket)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return a
}

// stop sends sig and waits for the agent to exit (SIGKILL after 10s).
func (a *agentProcess) stop(t *testing.T, sig syscall.Signal) {
	_ = a.cmd.Process.Signal(sig) // fails only when it exited already
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
		t.Errorf("the agent did not stop within 10s of %v; stderr:\n%s", sig, a.stderr.String())
	}
}

// client talks to the agent: over gRPC (HTTP/2 without TLS) with grpc, else
// Connect's JSON over HTTP/1.1, as curl and the Python example do.
func (a *agentProcess) client(grpc bool) lockv1connect.LockServiceClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", a.socket)
	}}
	opts := []connect.ClientOption{connect.WithProtoJSON()}
	if grpc {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		opts = []connect.ClientOption{connect.WithGRPC()}
	}
	return lockv1connect.NewLockServiceClient(&http.Client{Transport: tr}, "http://agent", opts...)
}

func ref(name string) *lockv1.LockRef { return &lockv1.LockRef{Name: name} }

// codeOf is the Connect code of err (CodeUnknown for a non-Connect error).
func codeOf(err error) connect.Code { return connect.CodeOf(err) }

// noValue fails when msg, as JSON, shows value: the lock value never
// leaves the agent.
func noValue(t *testing.T, value string, msgs ...proto.Message) {
	t.Helper()
	for _, m := range msgs {
		if b, _ := protojson.Marshal(m); value != "" && strings.Contains(string(b), value) {
			t.Fatalf("a reply carries the lock value: %s", b)
		}
	}
}

// A streamed lease lives while the stream is open: closing the stream
// releases the lock at once, so a waiter on another protocol gets it long
// before the TTL (30s), with a greater fence.
func TestAgentStreamHoldsUntilTheClientCloses(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "30s", "--identity", "agent-1")
	holderCtx, closeStream := context.WithCancel(t.Context())
	defer closeStream()
	stream, err := a.client(true).Acquire(holderCtx, connect.NewRequest(&lockv1.AcquireRequest{Lock: ref("jobs")}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("no grant: %v", stream.Err())
	}
	g := stream.Msg().GetGranted()
	if g == nil || g.GetKey() != "jobs" || g.GetFence() == 0 || g.GetHolder() != "agent-1" || g.GetTtl().AsDuration() != 30*time.Second ||
		g.GetValidFor().AsDuration() <= 0 || g.GetValidFor().AsDuration() > 30*time.Second {
		t.Fatalf("first message %v, want a grant of jobs with a fence, validity within the TTL", stream.Msg())
	}
	noValue(t, srv.Client(t).Get(t.Context(), "jobs").Val(), stream.Msg())

	type taken struct {
		res *connect.Response[lockv1.AcquireLeaseResponse]
		err error
		at  time.Time
	}
	waiter := make(chan taken, 1)
	go func() {
		res, err := a.client(false).AcquireLease(t.Context(), connect.NewRequest(&lockv1.AcquireLeaseRequest{
			Lock: ref("jobs"), KeepAlivePeriod: durationpb.New(10 * time.Second), Wait: durationpb.New(20 * time.Second)}))
		waiter <- taken{res, err, time.Now()}
	}()
	locktest.WaitFor(t, 5*time.Second, "the waiter in line", func() bool {
		res, err := a.client(false).Get(t.Context(), connect.NewRequest(&lockv1.GetRequest{Lock: ref("jobs")}))
		return err == nil && res.Msg.GetWaiting() == 1 && len(res.Msg.GetHolders()) == 1
	})
	closed := time.Now()
	closeStream()
	w := <-waiter
	switch {
	case w.err != nil:
		t.Fatalf("the waiter: %v", w.err)
	case w.at.Sub(closed) > 5*time.Second:
		t.Fatalf("the waiter got the lock %v after the stream closed: the agent did not release it", w.at.Sub(closed))
	case w.res.Msg.GetGrant().GetFence() <= g.GetFence():
		t.Fatalf("fence %d after %d: not greater", w.res.Msg.GetGrant().GetFence(), g.GetFence())
	}
}

// A unary lease lives while keep-alives arrive within the client's period;
// without them the agent releases it (not earlier), and a late KeepAlive
// learns why.
func TestAgentReleasesALeaseWithoutKeepAlives(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "30s")
	c := a.client(false)
	res, err := c.TryAcquireLease(t.Context(), connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: ref("report"), KeepAlivePeriod: durationpb.New(time.Second)}))
	if err != nil {
		t.Fatal(err)
	}
	id, fence := res.Msg.GetLeaseId(), res.Msg.GetGrant().GetFence()
	var last time.Time
	for range 4 { // 2s in all: twice the period
		time.Sleep(500 * time.Millisecond)
		k, err := c.KeepAlive(t.Context(), connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: id}))
		if err != nil || k.Msg.GetFence() != fence || k.Msg.GetValidFor().AsDuration() <= 0 {
			t.Fatalf("keep-alive: %v, %v", k, err)
		}
		last = time.Now()
	}
	rdb := srv.Client(t)
	time.Sleep(time.Until(last.Add(700 * time.Millisecond)))
	if rdb.Exists(t.Context(), "report").Val() != 1 {
		t.Fatal("released before the keep-alive period passed")
	}
	locktest.WaitFor(t, 5*time.Second, "the release", func() bool { return rdb.Exists(t.Context(), "report").Val() == 0 })
	_, err = c.KeepAlive(t.Context(), connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: id}))
	if codeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "no keep-alive within 1s") {
		t.Fatalf("a keep-alive after the release: %v, want FAILED_PRECONDITION saying why", err)
	}
}

// A unary lease lost in Redis (the key deleted from outside: the watchdog's
// renewal finds it is not ours) is reported to the next KeepAlive and
// Release: no goroutine watches the lease, so the table must look.
func TestAgentKeepAliveReportsALoss(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "1s")
	c := a.client(false)
	res, err := c.TryAcquireLease(t.Context(), connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: ref("k"), KeepAlivePeriod: durationpb.New(time.Minute)}))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Msg.GetLeaseId()
	if err := srv.Client(t).Del(t.Context(), "k").Err(); err != nil {
		t.Fatal(err)
	}
	var kerr error
	locktest.WaitFor(t, 5*time.Second, "a KeepAlive that reports the loss", func() bool {
		_, kerr = c.KeepAlive(t.Context(), connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: id}))
		return kerr != nil
	})
	if codeOf(kerr) != connect.CodeFailedPrecondition || !strings.Contains(kerr.Error(), "lost") {
		t.Fatalf("keep-alive after the loss: %v, want FAILED_PRECONDITION saying lost", kerr)
	}
	_, err = c.Release(t.Context(), connect.NewRequest(&lockv1.ReleaseRequest{LeaseId: id}))
	if codeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("release after the loss: %v, want FAILED_PRECONDITION", err)
	}
}

// A lease lost in Redis (the key taken from outside: the watchdog's renewal
// finds it is not ours) is reported on the stream, which then ends with
// FAILED_PRECONDITION: the client is told, never left holding silently.
func TestAgentStreamReportsALoss(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "1s")
	stream, err := a.client(true).Acquire(t.Context(), connect.NewRequest(&lockv1.AcquireRequest{Lock: ref("k")}))
	if err != nil || !stream.Receive() {
		t.Fatalf("acquire: %v %v", err, stream.Err())
	}
	if err := srv.Client(t).Del(t.Context(), "k").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var lost *lockv1.Loss
	for lost == nil && time.Now().Before(deadline) && stream.Receive() {
		lost = stream.Msg().GetLost()
	}
	if lost == nil || lost.GetReason() != "lost" {
		t.Fatalf("no loss reported within 5s (last %v, err %v)", stream.Msg(), stream.Err())
	}
	if stream.Receive() || codeOf(stream.Err()) != connect.CodeFailedPrecondition {
		t.Fatalf("after the loss: more messages or err %v, want the stream to end with FAILED_PRECONDITION", stream.Err())
	}
}

// A killed agent breaks its streams: the client gets an error, never a
// stream that stays quietly open.
func TestAgentKilledEndsTheStream(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "30s")
	stream, err := a.client(true).Acquire(t.Context(), connect.NewRequest(&lockv1.AcquireRequest{Lock: ref("k")}))
	if err != nil || !stream.Receive() {
		t.Fatalf("acquire: %v %v", err, stream.Err())
	}
	ended := make(chan error, 1)
	go func() {
		for stream.Receive() {
		}
		ended <- stream.Err()
	}()
	a.stop(t, syscall.SIGKILL)
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the stream ended without an error when its agent was killed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream stayed open 5s after its agent was killed")
	}
}

// SIGTERM ends every stream with a "closed" loss and releases every lease,
// streamed and unary, at once (not at their 30s TTL).
func TestAgentStopReleasesEveryLease(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "30s")
	stream, err := a.client(true).Acquire(t.Context(), connect.NewRequest(&lockv1.AcquireRequest{Lock: ref("streamed")}))
	if err != nil || !stream.Receive() {
		t.Fatalf("acquire: %v %v", err, stream.Err())
	}
	if _, err := a.client(false).TryAcquireLease(t.Context(), connect.NewRequest(&lockv1.TryAcquireLeaseRequest{Lock: ref("unary"), KeepAlivePeriod: durationpb.New(time.Minute)})); err != nil {
		t.Fatal(err)
	}
	a.stop(t, syscall.SIGTERM)
	var lost *lockv1.Loss
	for lost == nil && stream.Receive() {
		lost = stream.Msg().GetLost()
	}
	if lost.GetReason() != "closed" {
		t.Fatalf("the stream's end: %v (err %v), want a loss \"closed\"", stream.Msg(), stream.Err())
	}
	if n := srv.Client(t).Exists(t.Context(), "streamed", "unary").Val(); n != 0 {
		t.Fatalf("%d of the two keys still held after the agent stopped", n)
	}
}

package bench

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
)

// FamilyAgent is redlease through the lock agent: its rows are read
// against the library's ("redlease"), which runs the same Lua on the same
// server, so the difference is what the socket and the agent add.
const FamilyAgent = "redlease agent"

// FamilyAgentCalls is the agent's transport floor: two calls that reach
// the agent and do nothing there, the least any cycle through it adds.
const FamilyAgentCalls = "agent calls"

// FamilyHopFloor is the least that a second process between a client and
// Redis adds, whatever it runs: HopFloor.
const FamilyHopFloor = "process hop"

// HopFloor is the process-hop floor: two PINGs to redis-server over its Unix
// socket (Server.Socket), on a client of its own shared by every goroutine.
// redis-server answers a PING with next to no work, so a cycle of the row
// costs two round trips to another process on this machine: what any
// agent, in any language, adds to an acquire+release (two calls) before it
// does anything. Read against the library's p50, it bounds the ratio an
// out-of-process agent can reach here.
func HopFloor(socket string) *Lib {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: socket, PoolSize: 64})
	ping := func(ctx context.Context) error { return c.Ping(ctx).Err() }
	l := &Lib{
		Name: "process hop floor", Family: FamilyHopFloor,
		Tuning: "two PINGs to redis-server on its Unix socket: two round trips to a process that does no work",
		worker: shared(func(ctx context.Context, _ string) (Release, error) {
			if err := ping(ctx); err != nil {
				return nil, err
			}
			return ping, nil
		}),
	}
	l.onClose(func() { _ = c.Close() })
	return l
}

// agentKeepAlive is the keep-alive period of the agent rows' unary leases:
// longer than any cycle, so no lease is released for want of keep-alives.
const agentKeepAlive = 10 * time.Second

// AgentLibs are the uncontended rows through agent a: TryAcquireLease then
// Release, unary, over gRPC and over HTTP/JSON, each a client shared by
// every goroutine as an application shares its one client; then, per
// protocol, two calls that the agent answers without Redis
// (agentNoopCalls). Each row also counts the agent's CPU time (AgentCPU in
// its runs).
func AgentLibs(a *Agent) []*Lib {
	var libs []*Lib
	for _, p := range []Protocol{GRPC, JSON} {
		libs = append(libs, &Lib{
			Name: fmt.Sprintf("redlease via agent (%s)", p), Family: FamilyAgent,
			Tuning: fmt.Sprintf("lockctl agent on a Unix socket, %s: TryAcquireLease (keep-alive period %v) + Release", p, agentKeepAlive),
			worker: shared(agentTryLock(a.Client(p))),
			cpu:    a.cpu,
		})
	}
	for _, p := range []Protocol{GRPC, JSON} {
		libs = append(libs, &Lib{
			Name: fmt.Sprintf("agent no-op calls (%s)", p), Family: FamilyAgentCalls,
			Tuning: fmt.Sprintf("%s: two KeepAlive calls for an unknown lease (NOT_FOUND, no Redis): the socket, HTTP and Connect alone", p),
			worker: shared(agentNoopCalls(a.Client(p))),
			cpu:    a.cpu,
		})
	}
	return libs
}

// shared hands every goroutine f.
func shared(f LockFunc) func(int) LockFunc { return func(int) LockFunc { return f } }

// agentNoopCalls "acquires" and "releases" with a KeepAlive for a lease
// the agent does not know: a call that crosses the socket, HTTP and the
// encoding both ways and that the agent answers from its lease table, so
// two of them are the floor of any cycle through the agent.
func agentNoopCalls(c lockv1connect.LockServiceClient) LockFunc {
	call := func(ctx context.Context) error {
		_, err := c.KeepAlive(ctx, connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: "none"}))
		if connect.CodeOf(err) == connect.CodeNotFound {
			return nil
		}
		return fmt.Errorf("agent: a keep-alive for no lease: %w, want NOT_FOUND", err)
	}
	return func(ctx context.Context, _ string) (Release, error) {
		if err := call(ctx); err != nil {
			return nil, err
		}
		return call, nil
	}
}

// agentTryLock takes a unary lease in one attempt: a held key is an error,
// as for the floors (the uncontended scenario never meets one).
func agentTryLock(c lockv1connect.LockServiceClient) LockFunc {
	return func(ctx context.Context, key string) (Release, error) {
		res, err := c.TryAcquireLease(ctx, connect.NewRequest(&lockv1.TryAcquireLeaseRequest{
			Lock: &lockv1.LockRef{Name: key}, KeepAlivePeriod: durationpb.New(agentKeepAlive)}))
		if err != nil {
			return nil, err
		}
		return agentRelease(c, res.Msg.GetLeaseId()), nil
	}
}

// agentWaitLock waits for a unary lease (AcquireLease, no wait bound of its
// own: it waits until ctx ends), as a client without streams does.
func agentWaitLock(c lockv1connect.LockServiceClient) LockFunc {
	return func(ctx context.Context, key string) (Release, error) {
		res, err := c.AcquireLease(ctx, connect.NewRequest(&lockv1.AcquireLeaseRequest{
			Lock: &lockv1.LockRef{Name: key}, KeepAlivePeriod: durationpb.New(agentKeepAlive)}))
		if err != nil {
			return nil, err
		}
		return agentRelease(c, res.Msg.GetLeaseId()), nil
	}
}

func agentRelease(c lockv1connect.LockServiceClient, id string) Release {
	return func(ctx context.Context) error {
		_, err := c.Release(ctx, connect.NewRequest(&lockv1.ReleaseRequest{LeaseId: id}))
		return err
	}
}

// agentStreamLock waits for the lock on a streamed Acquire and holds it
// while the stream is open; the release closes the stream, and the agent
// gives the lock back as it sees the stream end. The stream does not
// outlive a release, but it does outlive ctx once granted: a run's end
// must not release a lock its holder has not finished with.
func agentStreamLock(c lockv1connect.LockServiceClient) LockFunc {
	return func(ctx context.Context, key string) (Release, error) {
		sctx, closeStream := context.WithCancel(context.WithoutCancel(ctx))
		stopWaiting := context.AfterFunc(ctx, closeStream)
		stream, err := c.Acquire(sctx, connect.NewRequest(&lockv1.AcquireRequest{Lock: &lockv1.LockRef{Name: key}}))
		if err != nil {
			stopWaiting()
			closeStream()
			return nil, err
		}
		granted := stream.Receive() && stream.Msg().GetGranted() != nil
		if !stopWaiting() || !granted { // ctx ended (the stream with it), or no grant
			closeStream()
			err := stream.Err()
			if err == nil {
				err = ctx.Err()
			}
			if err == nil {
				err = errNotGranted
			}
			return nil, err
		}
		return func(context.Context) error {
			closeStream()
			_ = stream.Close() // the stream is cancelled already: its body's error says nothing
			return nil
		}, nil
	}
}

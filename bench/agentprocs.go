package bench

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
)

// agentProcessMax is the most worker processes an agent row runs with:
// each worker starts an agent of its own, as each pod has its sidecar, so
// 16 workers are 32 processes on the machine's cores; at 64 the row would
// measure the scheduler.
const agentProcessMax = 16

// AgentProcessLibs are the processes scenario's rows through the lock
// agent: every worker process takes the lock through an agent of its own
// (lockctl agent --redis, on a socket only it uses), the realistic case of
// one agent per pod. The waiting is the library's, inside each agent.
func AgentProcessLibs() []ProcessLib {
	return []ProcessLib{
		{"redlease via agent (gRPC stream)", FamilyAgent,
			"an agent per process: streamed Acquire over gRPC, waiting in the agent; closing the stream releases", agentProcessMax,
			func(c *redis.Client, ttl time.Duration) (*Lib, error) {
				return newAgentProcessLib("redlease via agent (gRPC stream)", c, ttl, GRPC, agentStreamLock)
			}},
		{"redlease via agent (HTTP/JSON)", FamilyAgent,
			"an agent per process: AcquireLease (unary, waiting in the agent) + Release over HTTP/JSON", agentProcessMax,
			func(c *redis.Client, ttl time.Duration) (*Lib, error) {
				return newAgentProcessLib("redlease via agent (HTTP/JSON)", c, ttl, JSON, agentWaitLock)
			}},
	}
}

// newAgentProcessLib starts this worker's agent on c's server with the
// lease TTL ttl and takes the lock through it with lockf over p. Closing
// the library stops the agent. c itself sends nothing: the agent has its
// own client, whose commands the worker's Sent hook does not see.
func newAgentProcessLib(name string, c *redis.Client, ttl time.Duration, p Protocol, lockf func(lockv1connect.LockServiceClient) LockFunc) (*Lib, error) {
	lockctl, err := Lockctl(context.Background())
	if err != nil {
		return nil, err
	}
	a, err := StartAgent(lockctl, c.Options().Addr, "--ttl", ttl.String())
	if err != nil {
		return nil, err
	}
	f := lockf(a.Client(p))
	l := &Lib{Name: name, Family: FamilyAgent, worker: func(int) LockFunc { return f }}
	l.onClose(a.Close)
	return l, nil
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// single speaks the protocol to one Redis deployment through one go-redis
// client: standalone, Sentinel failover client, or Cluster client.
type single struct {
	client   redis.UniversalClient
	identity string
	fencing  bool
	announce bool // "acquired" messages
	released bool // "released" messages
	fifo     bool
	tickets  bool // WithTicketOrder
	// sharded: a ClusterClient, whose keys' messages go out on sharded
	// pub/sub (the scripts fall back to plain pub/sub on servers without
	// it; the subscriptions do the same, see events).
	sharded bool
	// window is how long a released key waits for the waiter it was handed to.
	window     time.Duration
	acks       int
	ackTimeout time.Duration
	ttl        time.Duration
	quarantine protocol.Quarantine
	// constants are the TTL, window, place and identity every call sends,
	// boxed once.
	constants *protocol.Constants
	// giveBackTimeout bounds the release of an acquisition that will not
	// be used (a failed WAIT, an attempt whose outcome is unknown).
	giveBackTimeout time.Duration
	// calls runs the scripts: the library's functions or EVALSHA
	// (WithFunctions); run is it bound to client.
	calls *protocol.Caller
	run   protocol.Runner

	// givingBack tracks background give-backs; stop cancels them on close.
	// closed (under mu) refuses new ones once close waits for them: an
	// Acquire still returning when Close runs must not Add to a WaitGroup
	// being waited on.
	mu         sync.Mutex
	closed     bool
	givingBack sync.WaitGroup
	stopCtx    context.Context
	stop       context.CancelFunc
}

func newSingle(client redis.UniversalClient, c *config) (*single, error) {
	if client == nil {
		return nil, invalidConfig("nil redis client")
	}
	if c.replicaAcks > 0 {
		if err := checkAckTimeout(client, c.replicaWait); err != nil {
			return nil, err
		}
	}
	stopCtx, stop := context.WithCancel(context.Background())
	_, sharded := client.(*redis.ClusterClient)
	s := &single{client: client, identity: c.identity, fencing: c.fencing, announce: c.announce, released: c.announce, fifo: c.fifo, tickets: c.tickets, sharded: sharded,
		window: c.handoffWindow(), acks: c.replicaAcks, ackTimeout: c.replicaWait, ttl: c.ttl, quarantine: c.quarantine,
		giveBackTimeout: min(c.ttl, c.closeTimeout), calls: protocol.NewCaller(c.functions), stopCtx: stopCtx, stop: stop,
		constants: protocol.NewConstants(c.ttl, c.handoffWindow(), c.place(), c.identity)}
	s.run = s.calls.On(client)
	return s, nil
}

// checkAckTimeout refuses a client WAIT cannot run on, or a WAIT timeout
// the client's read timeout would cut short: WAIT is read in a pipeline,
// bounded by the client's ReadTimeout (as resolved by go-redis: 0 or
// negative means none).
func checkAckTimeout(client redis.UniversalClient, timeout time.Duration) error {
	var read time.Duration
	switch c := client.(type) {
	case *redis.Client:
		read = c.Options().ReadTimeout
	case *redis.ClusterClient:
		read = c.Options().ReadTimeout
	default:
		return invalidConfig("WithReplicaAck needs a *redis.Client or *redis.ClusterClient, got %T", client)
	}
	if read > 0 && timeout >= read {
		return invalidConfig("WithReplicaAck timeout %v must be shorter than the client's ReadTimeout %v", timeout, read)
	}
	return nil
}

// addr names the server in errors.
func (s *single) addr() string {
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster"
	}
	return fmt.Sprintf("%T", s.client)
}

func (s *single) subscribers() []redis.UniversalClient { return []redis.UniversalClient{s.client} }

// close waits (bounded by ctx) for background give-backs, then cancels
// those still running.
func (s *single) close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	waitGroup(ctx, &s.givingBack)
	s.stop()
}

func (s *single) waitingLine() bool { return true }

func (s *single) leave(t target, value string) { s.giveBackAsync(t, value) }

func (s *single) countsHandOffs() bool { return s.acks == 0 }

func (s *single) acquire(ctx context.Context, t target, c claim) (attempt, error) {
	key, value := t.key, c.value
	args := protocol.AcquireArgs{Value: value, TTL: c.ttl, Fencing: s.fencing, Identity: s.identity, Announce: s.announce,
		Place: c.place, Queued: c.queued, FIFO: s.fifo, Window: s.window, Permits: t.permits, Sharded: s.sharded, Quarantine: s.quarantine, LineFresh: c.lineFresh, Tickets: s.tickets, Constants: s.constants,
		ValueArg: c.valueArg}
	var call protocol.Call
	switch {
	case t.semaphore():
		call = protocol.Call{Script: protocol.AcquirePermitScript, Keys: protocol.AcquirePermitKeys(key), Args: args.PermitArgv()}
	case t.shared:
		call = protocol.AcquireSharedCall(key, args)
	default:
		call = protocol.AcquireCall(key, args)
	}
	cmd, wait := s.eval(ctx, key, call)
	a, err := parseAttempt(key, cmd)
	if err != nil {
		if protocol.NotRun(err) {
			return attempt{notRun: true}, err
		}
		if ambiguous(err) {
			// The script may have run (a timeout after sending, a
			// connection lost before the reply): the key (or a permit)
			// could appear later, held by nobody, and block everyone, this
			// caller included, for a TTL.
			s.giveBackAsync(t, value)
		}
		return attempt{}, err
	}
	if !a.acquired {
		return a, nil
	}
	if err := s.acked(key, wait); err != nil {
		// Acquired on the master only: give it back now, on a fresh
		// context (the caller's may be spent by the WAIT).
		s.giveBack(t, value)
		return attempt{}, err
	}
	return a, nil
}

func parseAttempt(key string, cmd *redis.Cmd) (attempt, error) {
	a, err := protocol.ParseAttempt(cmd)
	switch {
	case err != nil:
		return attempt{}, fmt.Errorf("lock: acquire %q: %w", key, err)
	case a.Acquired:
		return attempt{acquired: true, fence: a.Fence}, nil
	}
	return attempt{holderTTL: a.Wait, counter: a.Counter, history: a.History, quarantine: a.Quarantine, recordedTTL: a.RecordedTTL}, nil
}

// eval runs call on key's server. Under WithReplicaAck, WAIT follows it
// in one pipeline — one round trip on one connection, which WAIT needs: it
// counts the replication of the writes of the connection it is sent on.
// wait is nil without WithReplicaAck; read it only when the script wrote.
func (s *single) eval(ctx context.Context, key string, call protocol.Call) (cmd, wait *redis.Cmd) {
	if s.acks == 0 {
		return s.calls.Run(ctx, s.client, call), nil
	}
	return s.evalAcked(ctx, key, call)
}

// evalAcked is eval under WithReplicaAck: a function of its own, so that
// the variable its pipeline's closure sets is not moved to the heap on
// every call without it.
func (s *single) evalAcked(ctx context.Context, key string, call protocol.Call) (cmd, wait *redis.Cmd) {
	node, err := s.master(ctx, key)
	if err != nil {
		return redis.NewCmdResult(nil, err), nil
	}
	cmd = s.calls.Pipelined(ctx, node, []protocol.Call{call}, func(p redis.Pipeliner) {
		wait = p.Do(ctx, "wait", s.acks, s.ackTimeout.Milliseconds())
	})[0]
	return cmd, wait
}

// acked turns WAIT's answer into nil, or ErrNotReplicated when fewer
// replicas than WithReplicaAck asks for acknowledged the write.
func (s *single) acked(key string, wait *redis.Cmd) error {
	if wait == nil {
		return nil
	}
	acked, err := wait.Int64()
	switch {
	case err != nil:
		return fmt.Errorf("%w: WAIT on %q: %w", ErrNotReplicated, key, err)
	case acked < int64(s.acks):
		return fmt.Errorf("%w: %d of %d replicas acknowledged %q within %v", ErrNotReplicated, acked, s.acks, key, s.ackTimeout)
	}
	return nil
}

// master returns the client of the server that owns key: the client itself,
// or on Cluster the client of the key's master.
func (s *single) master(ctx context.Context, key string) (*redis.Client, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("lock: finding the master of %q: %w", key, err)
		}
		return m, nil
	}
	return nil, invalidConfig("WithReplicaAck needs a *redis.Client or *redis.ClusterClient, got %T", s.client)
}

// giveBack releases an acquisition that will not be used, within
// giveBackTimeout, whatever the caller's context.
func (s *single) giveBack(t target, value string) {
	s.giveBackWith(func(ctx context.Context) { _, _ = s.release(ctx, t, value, nil) })
}

// giveBackWith runs release, which gives back an acquisition that will not
// be used, within giveBackTimeout, whatever the caller's context. It is
// best effort: the keys expire with their TTL anyway.
func (s *single) giveBackWith(release func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(s.stopCtx, s.giveBackTimeout)
	defer cancel()
	release(ctx)
}

// giveBackAsync gives back an attempt whose outcome is unknown (or a
// waiter's place in line, and the key or permit if it was handed to it),
// without making the caller wait (giveBackAsyncWith).
func (s *single) giveBackAsync(t target, value string) {
	s.giveBackAsyncWith(t.key, func(ctx context.Context) { _, _ = s.release(ctx, t, value, nil) })
}

// giveBackAsyncWith runs release in the background: the server that did
// not answer may still be stalled. It first waits for the server owning
// key to answer a PING: a server replies only after it handled every
// request that was ready before, so the attempt, if it is still to run,
// has run when the release arrives.
func (s *single) giveBackAsyncWith(key string, release func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // closed: the key, if set, expires with its TTL
	}
	s.givingBack.Go(func() {
		ctx, cancel := context.WithTimeout(s.stopCtx, s.giveBackTimeout)
		defer cancel()
		if err := s.ping(ctx, key); err != nil {
			return // still unreachable: the key, if set, expires with its TTL
		}
		release(ctx)
	})
}

// ping checks that the server owning key answers.
func (s *single) ping(ctx context.Context, key string) error {
	if _, ok := s.client.(*redis.ClusterClient); !ok {
		return s.client.Ping(ctx).Err()
	}
	m, err := s.master(ctx, key)
	if err != nil {
		return err
	}
	return m.Ping(ctx).Err()
}

// ambiguous reports whether a failed request may nevertheless have been
// executed: anything but an error reply from the server (a timeout, a
// connection lost after sending, a cancelled context).
func ambiguous(err error) bool {
	var reply redis.Error
	return !errors.As(err, &reply)
}

// renew extends the key if it is still ours. Under WithReplicaAck the
// extension counts only once replicas acknowledged it (ErrNotReplicated
// otherwise): a replica promoted after an unacknowledged renewal may hold
// the key only as long as the previous acknowledged TTL.
func (s *single) renew(ctx context.Context, t target, value string, ttl time.Duration) (bool, error) {
	cmd, wait := s.eval(ctx, t.key, s.renewCall(t, value, ttl))
	ok, err := renewReply(t.key, cmd)
	if !ok || err != nil {
		return false, err
	}
	return true, s.acked(t.key, wait)
}

// renewCall is the renewal of value's hold on t for ttl.
func (s *single) renewCall(t target, value string, ttl time.Duration) protocol.Call {
	switch {
	case t.semaphore():
		return protocol.RenewPermitCall(t.key, value, ttl, s.quarantine)
	case t.shared:
		return protocol.RenewSharedCall(t.key, value, ttl, s.quarantine)
	}
	return protocol.RenewCall(t.key, value, ttl, s.quarantine)
}

func renewReply(key string, cmd *redis.Cmd) (bool, error) {
	n, err := cmd.Int64()
	if err != nil {
		return false, fmt.Errorf("lock: renew %q: %w", key, err)
	}
	return n == 1, nil
}

// batches reports whether renewals may share a pipeline: not under
// WithReplicaAck, whose WAIT counts one connection's writes per key.
func (s *single) batches() bool { return s.acks == 0 }

// nodeLeases are leases whose keys one server holds, and the client that
// reaches it.
type nodeLeases struct {
	client redis.Cmdable
	leases []*Lease
}

// byNode splits leases by the master of their keys: on Cluster each group
// goes to its master's own client, so that one node's stall does not hold
// up the others' renewals (a ClusterClient splits a pipeline by node too,
// but returns only when every node has answered) and the ClusterClient's
// routing of every command is spent once per lease here, not again in the
// pipeline. Elsewhere, and for keys whose master is not known yet, one
// group on the client.
func (s *single) byNode(leases []*Lease) []nodeLeases {
	c, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return []nodeLeases{{s.client, leases}}
	}
	index := map[redis.Cmdable]int{}
	var groups []nodeLeases
	for _, lease := range leases {
		var client redis.Cmdable = c // unknown master: the ClusterClient finds it
		if node, err := c.MasterForKey(s.stopCtx, lease.key); err == nil {
			client = node
		}
		i, ok := index[client]
		if !ok {
			i = len(groups)
			index[client] = i
			groups = append(groups, nodeLeases{client: client})
		}
		groups[i].leases = append(groups[i].leases, lease)
	}
	return groups
}

// renewBatch renews rs in one pipeline on client (the Caller runs again,
// in a second one, those the server wants run another way: a script it
// does not know yet, a function it does not have) and answers for each.
// Renewals a Cluster master redirected (its slot moved) run again through
// the ClusterClient, which follows the redirection and reloads its map.
func (s *single) renewBatch(ctx context.Context, client redis.Cmdable, rs []renewal) []renewResult {
	calls := make([]protocol.Call, len(rs))
	for i, r := range rs {
		calls[i] = s.renewCall(r.target, r.value, r.ttl)
	}
	cmds := s.calls.Pipelined(ctx, client, calls, nil)
	if client != s.client {
		var moved []int
		for i, cmd := range cmds {
			// redis.HasErrorPrefix allocates even for nil: the common case
			// is checked first.
			if err := cmd.Err(); err != nil && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")) {
				moved = append(moved, i)
			}
		}
		if len(moved) > 0 {
			again := make([]protocol.Call, len(moved))
			for j, i := range moved {
				again[j] = calls[i]
			}
			for j, cmd := range s.calls.Pipelined(ctx, s.client, again, nil) {
				cmds[moved[j]] = cmd
			}
		}
	}
	out := make([]renewResult, len(rs))
	for i, r := range rs {
		out[i].ok, out[i].err = renewReply(r.key, cmds[i])
	}
	return out
}

func (s *single) release(ctx context.Context, t target, value string, arg any) (bool, error) {
	a := s.releaseArgs()
	a.ValueArg = arg
	var ok bool
	var err error
	switch {
	case t.semaphore():
		ok, err = protocol.ReleasePermit(ctx, s.run, t.key, value, t.permits, a)
	case t.shared:
		ok, err = protocol.ReleaseShared(ctx, s.run, t.key, value, a)
	default:
		ok, err = protocol.Release(ctx, s.run, t.key, value, a)
	}
	if err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	return ok, nil
}

// releaseArgs are the arguments of this deployment's releases.
func (s *single) releaseArgs() protocol.ReleaseArgs {
	return protocol.ReleaseArgs{Window: s.window, Announce: s.released, Sharded: s.sharded, TTL: s.ttl, Quarantine: s.quarantine,
		Constants: s.constants}
}

// raiseFence sets the key's fence counter to at least fence (Redlock's
// write-back).
func (s *single) raiseFence(ctx context.Context, key string, fence uint64) (bool, error) {
	return protocol.RaiseFence(ctx, s.run, key, fence)
}

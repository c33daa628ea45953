/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// tenantKey is team-a's lock in the tests.
const tenantKey = "team-a/job"

// lifecycleTTL is far above the time a waiter may take to be handed the
// lock: a waiter that acquires within waitBound was woken by the release's
// PUBLISH on the events channel, not by its retry after the holder's TTL.
const (
	lifecycleTTL = 30 * time.Second
	waitBound    = 10 * time.Second
)

// deployment is a lock store of one shape: the nodes to provision, and
// Lockers and clients for a tenant, made from a username and password.
type deployment struct {
	nodes  []*redistest.Server
	opts   protocol.ACLOptions
	locker func(t *testing.T, user, password string, opts ...lock.Option) *lock.Locker
	client func(t *testing.T, user, password string) redis.UniversalClient
	// extra exercises what go-redis sends on this shape only in situations
	// the lifecycle does not create; nil when there is none.
	extra func(ctx context.Context, t *testing.T, user, password string)
	// noSemaphores: the shape refuses semaphores (Redlock).
	noSemaphores bool
}

// TestTenantRunsTheLockLifecycle is the test that fails when the rule list
// misses a command the library or go-redis sends: a Locker authenticated as
// team-a's ACL user acquires with fencing, renews, inspects, waits for a
// release on the events channel, is handed the lock and releases, on every
// deployment shape the rules distinguish, and does the same with a
// semaphore's permits (but on Redlock, which refuses them); and no node
// logged an ACL denial, not even of a command whose refusal the client
// swallows.
func TestTenantRunsTheLockLifecycle(t *testing.T) {
	tests := []struct {
		name  string
		start func(t *testing.T) deployment
	}{
		{"standalone", func(t *testing.T) deployment { return standalone(t, 0) }},
		// SELECT on connect.
		{"standalone db 3", func(t *testing.T) deployment { return standalone(t, 3) }},
		// WAIT after every write; the replica gets the user too.
		{"replicated with replica ack", replicatedWithAck},
		// The master found through Sentinels (which are not isolated).
		{"sentinel", sentinel},
		// Every node votes, the fence is written back.
		{"redlock", redlock},
		// CLUSTER SLOTS, COMMAND, ASKING, READONLY; every node provisioned.
		{"cluster", cluster},
	}
	for _, tt := range tests {
		for _, functionsOnly := range []bool{false, true} {
			name := tt.name + "/scripts and functions"
			if functionsOnly {
				name = tt.name + "/functions only"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runTenantLifecycle(t, tt.start(t), functionsOnly)
			})
		}
	}
}

// runTenantLifecycle runs the lifecycle on d as team-a. functionsOnly: the
// library is loaded on every master and the tenant may run nothing but its
// functions — no EVAL, EVALSHA, SCRIPT or FUNCTION — and does it all
// through FCALL.
func runTenantLifecycle(t *testing.T, d deployment, functionsOnly bool) {
	ctx := testContext(t)
	d.opts.FunctionsOnly = functionsOnly
	if functionsOnly {
		loadLibrary(ctx, t, d.nodes)
	}
	pw := redisacl.NewPassword()
	user := provision(ctx, t, d.nodes, "team-a", d.opts, redisacl.Passwords{Current: pw})
	resetACLLog(ctx, t, d.nodes)
	opts := []lock.Option{lock.WithTTL(lifecycleTTL), lock.WithFencing(true)}
	holder := d.locker(t, user, pw, append(opts, lock.WithIdentity("holder"))...)
	waiter := d.locker(t, user, pw, append(opts, lock.WithIdentity("waiter"))...)
	runLifecycle(ctx, t, d.nodes, holder, waiter)
	if !d.noSemaphores {
		runSemaphoreLifecycle(ctx, t, d.nodes, holder, waiter)
	}
	exercisePubSub(ctx, t, d.client(t, user, pw))
	if d.extra != nil {
		d.extra(ctx, t, user, pw)
	}
	requireNoDenials(ctx, t, d.nodes)
	if functionsOnly {
		refusesLua(ctx, t, d.client(t, user, pw))
	}
}

// loadLibrary loads the protocol's function library on every master of
// nodes; the replicas receive it from their masters.
func loadLibrary(ctx context.Context, t *testing.T, nodes []*redistest.Server) {
	t.Helper()
	for _, n := range nodes {
		info, err := n.Info(ctx, "replication")
		if err != nil {
			t.Fatal(err)
		}
		if info["role"] != "master" {
			continue
		}
		if err := protocol.LoadLibrary(ctx, n.Client(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// refusesLua checks that a functions-only tenant can run no Lua of its
// own: a busy loop would stall the shared server for every tenant.
func refusesLua(ctx context.Context, t *testing.T, c redis.UniversalClient) {
	t.Helper()
	const loop = "local i = 0 while true do i = i + 1 end"
	wantNoPerm(t, "EVAL", c.Eval(ctx, loop, []string{tenantKey}).Err())
	wantNoPerm(t, "EVALSHA", c.EvalSha(ctx, "0000000000000000000000000000000000000000", []string{tenantKey}).Err())
	wantNoPerm(t, "SCRIPT LOAD", c.ScriptLoad(ctx, loop).Err())
	wantNoPerm(t, "FUNCTION LOAD", c.FunctionLoad(ctx, "#!lua name=mine\nredis.register_function('mine', function() "+loop+" end)").Err())
}

// single is a deployment whose tenants reach one server through client.
func single(nodes []*redistest.Server, opts protocol.ACLOptions, client func(t *testing.T, user, password string) redis.UniversalClient, lockOpts ...lock.Option) deployment {
	return deployment{
		nodes: nodes, opts: opts, client: client,
		locker: func(t *testing.T, user, password string, opts ...lock.Option) *lock.Locker {
			return locktest.New(t, client(t, user, password), append(opts, lockOpts...)...)
		},
	}
}

func standalone(t *testing.T, db int) deployment {
	s := redistest.StartStandalone(t)
	return single([]*redistest.Server{s}, protocol.ACLOptions{DB: db},
		func(t *testing.T, user, password string) redis.UniversalClient {
			return tenantClient(t, s, user, password, func(o *redis.Options) { o.DB = db })
		})
}

func replicatedWithAck(t *testing.T) deployment {
	r := redistest.StartReplicated(t, 1)
	return single([]*redistest.Server{r.Master, r.Replicas[0]}, protocol.ACLOptions{},
		func(t *testing.T, user, password string) redis.UniversalClient {
			return tenantClient(t, r.Master, user, password)
		},
		lock.WithReplicaAck(1, time.Second))
}

func sentinel(t *testing.T) deployment {
	g := redistest.StartSentinel(t, 1)
	return single([]*redistest.Server{g.Master, g.Replicas[0]}, protocol.ACLOptions{},
		func(t *testing.T, user, password string) redis.UniversalClient {
			c := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs(), Username: user, Password: password,
			})
			t.Cleanup(func() { _ = c.Close() })
			return c
		})
}

func redlock(t *testing.T) deployment {
	nodes := redistest.StartNodes(t, 3)
	clients := func(t *testing.T, user, password string) []redis.UniversalClient {
		cs := make([]redis.UniversalClient, len(nodes))
		for i, n := range nodes {
			cs[i] = tenantClient(t, n, user, password)
		}
		return cs
	}
	return deployment{
		nodes: nodes,
		locker: func(t *testing.T, user, password string, opts ...lock.Option) *lock.Locker {
			return locktest.NewRedlock(t, clients(t, user, password), opts...)
		},
		client:       func(t *testing.T, user, password string) redis.UniversalClient { return clients(t, user, password)[0] },
		noSemaphores: true,
	}
}

func cluster(t *testing.T) deployment {
	c := redistest.StartCluster(t)
	client := func(t *testing.T, user, password string) redis.UniversalClient {
		return tenantClusterClient(t, c, user, password, false)
	}
	d := single(append(append([]*redistest.Server(nil), c.Masters...), c.Replicas...), protocol.ACLOptions{Cluster: true}, client)
	d.extra = func(ctx context.Context, t *testing.T, user, password string) {
		exerciseAsking(ctx, t, c, client(t, user, password).(*redis.ClusterClient))
		// A ClusterClient with ReadOnly (or RouteBy*) sends READONLY on
		// every connection, and fails the connection if it is refused.
		if err := tenantClusterClient(t, c, user, password, true).Get(ctx, tenantKey).Err(); err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("GET through a ReadOnly cluster client: %v", err)
		}
	}
	return d
}

func tenantClusterClient(t *testing.T, c *redistest.Cluster, user, password string, readOnly bool) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: user, Password: password, ReadOnly: readOnly})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// exerciseAsking puts a tenant key's slot in migration, so that reading a
// key absent from the slot's master is redirected with -ASK and go-redis
// sends ASKING to the importing node, then ends the migration.
func exerciseAsking(ctx context.Context, t *testing.T, c *redistest.Cluster, tenant *redis.ClusterClient) {
	t.Helper()
	const key = "team-a/migrating"
	admins := make([]*redis.Client, len(c.Masters))
	ids := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		admins[i] = m.Client(t)
		var err error
		if ids[i], err = admins[i].ClusterMyID(ctx).Result(); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := admins[0].ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The tenant client learns the slot map first, so that it sends the
	// read to the slot's owner and gets the redirection.
	if err := tenant.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET %s: %v", key, err)
	}
	owner, err := tenant.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	src := slices.IndexFunc(c.Masters, func(m *redistest.Server) bool { return m.Addr() == owner.Options().Addr })
	if src < 0 {
		t.Fatalf("the owner of %s, %s, is not a master", key, owner.Options().Addr)
	}
	dst := (src + 1) % len(c.Masters)
	setSlot := func(i int, args ...any) {
		t.Helper()
		if err := admins[i].Do(ctx, append([]any{"cluster", "setslot", slot}, args...)...).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT %d %v on %s: %v", slot, args, c.Masters[i], err)
		}
	}
	setSlot(dst, "importing", ids[src])
	setSlot(src, "migrating", ids[dst])
	defer func() { setSlot(src, "stable"); setSlot(dst, "stable") }()
	if err := tenant.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET %s in a migrating slot (ASKING to the importing node): %v", key, err)
	}
}

// runLifecycle drives tenantKey through everything the library does with a
// key, as a tenant.
func runLifecycle(ctx context.Context, t *testing.T, nodes []*redistest.Server, holder, waiter *lock.Locker) {
	t.Helper()
	first, err := holder.Acquire(ctx, tenantKey)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	locktest.ReleaseAtEnd(t, first)
	if first.Fence() == 0 {
		t.Errorf("fence 0: fencing did not run")
	}
	if err := first.Renew(ctx); err != nil {
		t.Errorf("Renew: %v", err)
	}
	h, err := holder.Inspect(ctx, tenantKey)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if !h.Held || h.Identity != "holder" || h.Fence != first.Fence() {
		t.Errorf("Inspect = %+v, want held by holder with fence %d", h, first.Fence())
	}

	type result struct {
		lease *lock.Lease
		err   error
	}
	handed := make(chan result, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, waitBound)
		defer cancel()
		l, err := waiter.Acquire(wctx, tenantKey)
		handed <- result{l, err}
	}()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	waitSubscribed(sctx, t, nodes, protocol.EventsChannel(tenantKey))
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := <-handed
	if r.err != nil {
		t.Fatalf("the waiter was not handed the lock within %v (TTL %v): %v", waitBound, lifecycleTTL, r.err)
	}
	locktest.ReleaseAtEnd(t, r.lease)
	if r.lease.Fence() <= first.Fence() {
		t.Errorf("the waiter's fence %d is not above the first holder's %d", r.lease.Fence(), first.Fence())
	}
	if err := r.lease.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if h, err := waiter.Inspect(ctx, tenantKey); err != nil || h.Held || h.Fence != r.lease.Fence() {
		t.Errorf("Inspect after release = %+v, %v; want free with fence %d", h, err, r.lease.Fence())
	}
}

// tenantSemaphore is team-a's semaphore in the tests.
const tenantSemaphore = "team-a/pool"

// runSemaphoreLifecycle drives tenantSemaphore (2 permits) through what
// the library does with one, as a tenant: two permits, a refused third,
// renewal, Inspect, a waiter handed a permit by a release, the releases.
func runSemaphoreLifecycle(ctx context.Context, t *testing.T, nodes []*redistest.Server, holder, waiter *lock.Locker) {
	t.Helper()
	sem := holder.Semaphore(tenantSemaphore, 2)
	var held []*lock.Lease
	for range 2 {
		l, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatalf("Semaphore.Acquire: %v", err)
		}
		locktest.ReleaseAtEnd(t, l)
		held = append(held, l)
	}
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("a third permit = %v, want ErrNotAcquired", err)
	}
	if err := held[0].Renew(ctx); err != nil {
		t.Errorf("renewing a permit: %v", err)
	}
	if h, err := sem.Inspect(ctx); err != nil || h.Held() != 2 || h.Fence != held[1].Fence() {
		t.Errorf("Semaphore.Inspect = %+v, %v; want 2 held, fence %d", h, err, held[1].Fence())
	}
	handed := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, waitBound)
		defer cancel()
		l, err := waiter.Semaphore(tenantSemaphore, 2).Acquire(wctx)
		if err == nil {
			err = l.Release(ctx)
		}
		handed <- err
	}()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	waitSubscribed(sctx, t, nodes, protocol.EventsChannel(tenantSemaphore))
	if err := held[0].Release(ctx); err != nil {
		t.Fatalf("releasing a permit: %v", err)
	}
	if err := <-handed; err != nil {
		t.Fatalf("the permit waiter was not handed a permit within %v: %v", waitBound, err)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatalf("releasing a permit: %v", err)
	}
}

// waitSubscribed returns once some node counts a subscriber of channel:
// the waiter's SUBSCRIBE was allowed.
func waitSubscribed(ctx context.Context, t *testing.T, nodes []*redistest.Server, channel string) {
	t.Helper()
	admins := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		admins[i] = n.Client(t)
	}
	for {
		for _, a := range admins {
			subs, err := a.PubSubNumSub(ctx, channel).Result()
			if err != nil {
				t.Fatal(err)
			}
			shard, err := a.PubSubShardChannels(ctx, channel).Result() // Redis Cluster: sharded pub/sub
			if err != nil {
				t.Fatal(err)
			}
			if subs[channel] > 0 || len(shard) > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nobody subscribed to %s: %v", channel, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// exercisePubSub sends what the library's subscription loop sends only on
// timers too slow for a test — PING on a subscription idle for a minute,
// UNSUBSCRIBE after a channel's 30 s linger — and a plain PING (sent before
// giving back an attempt whose outcome is unknown); on Redis Cluster the
// same on sharded pub/sub too, which the library uses there.
func exercisePubSub(ctx context.Context, t *testing.T, c redis.UniversalClient) {
	t.Helper()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING: %v", err)
	}
	ch := protocol.EventsChannel(tenantKey)
	exerciseSubscription(ctx, t, c.Subscribe(ctx, ch), ch, "UNSUBSCRIBE", (*redis.PubSub).Unsubscribe)
	if cc, ok := c.(*redis.ClusterClient); ok {
		exerciseSubscription(ctx, t, cc.SSubscribe(ctx, ch), ch, "SUNSUBSCRIBE", (*redis.PubSub).SUnsubscribe)
	}
}

// exerciseSubscription confirms ps's subscription to ch, PINGs on it and
// leaves ch with unsubscribe (the command named unsub).
func exerciseSubscription(ctx context.Context, t *testing.T, ps *redis.PubSub, ch, unsub string,
	unsubscribe func(*redis.PubSub, context.Context, ...string) error) {
	t.Helper()
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("subscribing to %s: %v", ch, err)
	}
	if err := ps.Ping(ctx); err != nil {
		t.Fatalf("PING on the subscription: %v", err)
	}
	if msg, err := ps.Receive(ctx); err != nil {
		t.Errorf("PING on the subscription: %v", err)
	} else if _, ok := msg.(*redis.Pong); !ok {
		t.Errorf("PING on the subscription: got %T %v", msg, msg)
	}
	if err := unsubscribe(ps, ctx, ch); err != nil {
		t.Fatalf("%s %s: %v", unsub, ch, err)
	}
	if msg, err := ps.Receive(ctx); err != nil {
		t.Errorf("%s %s: %v", unsub, ch, err)
	} else if s, ok := msg.(*redis.Subscription); !ok || s.Kind != strings.ToLower(unsub) {
		t.Errorf("%s %s: got %T %v", unsub, ch, msg, msg)
	}
}

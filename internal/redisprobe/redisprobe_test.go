package redisprobe

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newPool returns a Pool that is closed, and its error checked, when the test
// ends: start the servers it talks to first, so it closes before they stop.
func newPool(t *testing.T, o PoolOptions) *Pool {
	t.Helper()
	p := NewPool(o)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Pool.Close: %v", err)
		}
	})
	return p
}

func poolClient(t *testing.T, p *Pool, owner string, tg Target) *redis.Client {
	t.Helper()
	s := p.Session(owner)
	c, err := s.Client(tg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseInfo(t *testing.T) {
	text := "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nrun_id:abc\r\n" +
		"# Clients\r\nconnected_clients:3\r\n# Memory\r\nused_memory:950\r\nmaxmemory:1000\r\nmaxmemory_policy:allkeys-lru\r\n" +
		"# Persistence\r\naof_enabled:1\r\n# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
		"slave0:ip=10.0.0.2,port=6379,state=online,offset=10,lag=0\r\n" +
		"slave1:ip=fd00::3,port=6380,state=wait_bgsave,offset=0,lag=4\r\n" +
		"master_replid:r1\r\n# Cluster\r\ncluster_enabled:0\r\n"
	si := ParseInfo(text)
	want := ServerInfo{
		Role: RoleMaster, Version: "7.0.15", Server: "redis 7.0.15", RunID: "abc", ReplID: "r1", ConnectedReplicas: 2,
		Replicas:   []Replica{{Addr: "10.0.0.2:6379", Online: true}, {Addr: "[fd00::3]:6380", Lag: 4}},
		AOFEnabled: true, MaxMemoryPolicy: "allkeys-lru", ConnectedClients: 3,
		UsedMemory: 950, MaxMemory: 1000,
	}
	if !equalInfo(si, want) {
		t.Errorf("ParseInfo = %+v\nwant %+v", si, want)
	}
	if used, ok := si.MemoryUsed(); !ok || used != 0.95 {
		t.Errorf("MemoryUsed = %v, %t; want 0.95, true", used, ok)
	}
	if _, ok := ParseInfo("used_memory:950\nmaxmemory:0\n").MemoryUsed(); ok {
		t.Error("MemoryUsed reports a fraction of no limit (maxmemory 0)")
	}
	rep := ParseInfo("role:slave\nmaster_host:10.0.0.1\nmaster_port:6379\nmaster_link_status:up\n")
	if rep.Role != RoleReplica || rep.MasterAddr != "10.0.0.1:6379" || !rep.MasterLinkUp {
		t.Errorf("replica = %+v", rep)
	}
	if s := ParseInfo("redis_mode:sentinel\nrun_id:x\n"); s.Role != RoleSentinel {
		t.Errorf("sentinel role = %q", s.Role)
	}
	// Valkey keeps redis_version at the Redis version it is compatible
	// with, and says what it is beside it.
	v := ParseInfo("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n")
	if v.Version != "7.2.4" || v.Server != "valkey 8.0.1" {
		t.Errorf("valkey: version %q, server %q; want 7.2.4 and valkey 8.0.1", v.Version, v.Server)
	}
}

func equalInfo(a, b ServerInfo) bool { return reflect.DeepEqual(a, b) }

func TestReplicaSettings(t *testing.T) {
	s := func(w, l int) ReplicaSettings { return ReplicaSettings{MinReplicasToWrite: w, MinReplicasMaxLag: l} }
	cases := []struct {
		have, want ReplicaSettings
		atLeast    bool
	}{
		{s(1, 10), s(1, 10), true},
		{s(2, 5), s(1, 10), true},
		{s(1, 11), s(1, 10), false},
		{s(0, 10), s(1, 10), false},
		{s(3, 0), s(1, 10), false}, // lag 0 turns the guard off in Redis
		{s(0, 0), s(0, 10), true},
	}
	for _, c := range cases {
		if got := c.have.AtLeast(c.want); got != c.atLeast {
			t.Errorf("%v.AtLeast(%v) = %v, want %v", c.have, c.want, got, c.atLeast)
		}
	}
	if got := s(1, 10).Stricter(s(2, 20)); got != s(2, 10) {
		t.Errorf("Stricter = %v, want %v", got, s(2, 10))
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := "a1 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n" +
		"b1 10.0.0.2:6379@16379 master - 0 0 2 connected 5461-10922 [5000->-a1]\n" +
		"c1 10.0.0.3:6379@16379 master,fail - 0 0 3 connected 10923-16383\n" +
		"a2 10.0.0.4:6379@16379 slave a1 0 0 1 connected\n"
	got := parseClusterNodes(text)
	if len(got) != 3 {
		t.Fatalf("%d shards: %+v", len(got), got)
	}
	if got[0].Master != "10.0.0.1:6379" || !slices.Equal(got[0].Replicas, []string{"10.0.0.4:6379"}) || !got[0].Serves(0) || got[0].Serves(5461) {
		t.Errorf("shard 0 = %+v", got[0])
	}
	if got[2].MasterHealthy {
		t.Errorf("a failing master is healthy: %+v", got[2])
	}
}

// TestProbeConfigHolder runs the server-facing operations against a real
// redis-server.
func TestProbeConfigHolder(t *testing.T) {
	ctx := ctxT(t)
	srv := redistest.StartStandalone(t)
	p := newPool(t, PoolOptions{})
	c := poolClient(t, p, "o", Target{Addr: srv.Addr()})
	checkProbeAndConfig(ctx, t, c)
	if err := ApplyReplicaSettings(ctx, c, ReplicaSettings{}); err != nil { // no replicas here
		t.Fatal(err)
	}
	checkHolder(ctx, t, srv, c)
}

// checkProbeAndConfig: Probe of a fresh master, then CONFIG SET and GET of
// the replica guard.
func checkProbeAndConfig(ctx context.Context, t *testing.T, c *redis.Client) {
	t.Helper()
	si, err := Probe(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if si.Role != RoleMaster || si.RunID == "" || si.Version == "" || si.MaxMemoryPolicy != "noeviction" {
		t.Errorf("Probe = %+v", si)
	}
	want := ReplicaSettings{MinReplicasToWrite: 2, MinReplicasMaxLag: 7}
	if err := ApplyReplicaSettings(ctx, c, want); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig(ctx, c)
	if err != nil || cfg.Replica != want || cfg.Save != "" {
		t.Errorf("ReadConfig = %+v, %v; want %v and no save", cfg, err, want)
	}
}

// checkHolder: ReadHolder and RaiseFence on a free key, one held by
// pkg/lock, and one with a value pkg/lock did not write.
func checkHolder(ctx context.Context, t *testing.T, srv *redistest.Server, c *redis.Client) {
	t.Helper()
	h, err := protocol.ReadHolder(ctx, protocol.Scripts(c), "k")
	if err != nil || !free(h) {
		t.Errorf("ReadHolder on a free lock = %+v, %v: want not held, no fence, an empty line", h, err)
	}
	l, err := lock.New(srv.Client(t), lock.WithIdentity("me"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Locker.Close: %v", err)
		}
	})
	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	h, err = protocol.ReadHolder(ctx, protocol.Scripts(c), "k")
	if err != nil || !h.Held || h.Identity != "me" || !h.FenceSet || h.Fence != lease.Fence() {
		t.Errorf("ReadHolder = %+v, %v; want me with fence %d", h, err, lease.Fence())
	}
	if raised, err := protocol.RaiseFence(ctx, protocol.Scripts(c), "k", lease.Fence()-1); err != nil || raised {
		t.Errorf("RaiseFence below the counter = %v, %v; want no change", raised, err)
	}
	if raised, err := protocol.RaiseFence(ctx, protocol.Scripts(c), "k", lease.Fence()+100); err != nil || !raised {
		t.Errorf("RaiseFence above = %v, %v", raised, err)
	}
	if err := c.Set(ctx, "foreign", "not-ours", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if h, err := protocol.ReadHolder(ctx, protocol.Scripts(c), "foreign"); err != nil || !h.Held || h.Identity != "" {
		t.Errorf("ReadHolder of a foreign value = %+v, %v", h, err)
	}
}

func TestConfigUnavailable(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithConfig("--rename-command", "CONFIG", `""`))
	p := newPool(t, PoolOptions{})
	c := poolClient(t, p, "o", Target{Addr: srv.Addr()})
	_, err := ReadConfig(ctxT(t), c)
	if !errors.Is(err, ErrConfigUnavailable) || !IsConfigUnavailable(err) {
		t.Errorf("ReadConfig with CONFIG renamed: %v", err)
	}
	if err := ApplyReplicaSettings(ctxT(t), c, ReplicaSettings{1, 10}); !errors.Is(err, ErrConfigUnavailable) {
		t.Errorf("ApplyReplicaSettings with CONFIG renamed: %v", err)
	}
}

func TestAuthErrors(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithPassword("pw"))
	p := newPool(t, PoolOptions{})
	for name, tg := range map[string]Target{
		"wrong password": {Addr: srv.Addr(), Credentials: Credentials{Password: "nope"}},
		"no password":    {Addr: srv.Addr()},
	} {
		_, err := Probe(ctxT(t), poolClient(t, p, name, tg))
		if !IsAuthError(err) {
			t.Errorf("%s: %v is not an auth error", name, err)
		}
	}
	if _, err := Probe(ctxT(t), poolClient(t, p, "ok", Target{Addr: srv.Addr(), Credentials: Credentials{Password: "pw"}})); err != nil {
		t.Errorf("right password: %v", err)
	}
	down := redistest.StartStandalone(t)
	down.Kill()
	if _, err := Probe(ctxT(t), poolClient(t, p, "down", Target{Addr: down.Addr()})); err == nil || IsAuthError(err) {
		t.Errorf("a dead server: %v", err)
	}
}

func TestReplication(t *testing.T) {
	g := redistest.StartReplicated(t, 1)
	p := newPool(t, PoolOptions{})
	// The master reports the replica online once it acknowledged the sync,
	// a moment after redistest sees the link up: poll, far above that.
	var m ServerInfo
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if m, err = Probe(ctxT(t), poolClient(t, p, "o", Target{Addr: g.Master.Addr()})); err != nil {
			t.Fatal(err)
		}
		if len(m.Replicas) == 1 && m.Replicas[0].Online || time.Now().After(deadline) {
			break
		}
	}
	r, err := Probe(ctxT(t), poolClient(t, p, "o", Target{Addr: g.Replicas[0].Addr()}))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Replicas) != 1 || m.Replicas[0].Addr != g.Replicas[0].Addr() || !m.Replicas[0].Online {
		t.Errorf("master lists replicas %+v, want %s online", m.Replicas, g.Replicas[0].Addr())
	}
	if r.Role != RoleReplica || r.MasterAddr != g.Master.Addr() || !r.MasterLinkUp {
		t.Errorf("replica = %+v", r)
	}
	if m.ReplID == "" || m.ReplID != r.ReplID || m.RunID == r.RunID {
		t.Errorf("master and replica: replid %q/%q, run_id %q/%q", m.ReplID, r.ReplID, m.RunID, r.RunID)
	}
}

func TestSentinelAndCluster(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		g := redistest.StartSentinel(t, 1)
		p := newPool(t, PoolOptions{})
		c := poolClient(t, p, "o", Target{Addr: g.Sentinels[0].Addr()})
		v, err := AskSentinel(ctxT(t), c, g.MasterName)
		if err != nil {
			t.Fatal(err)
		}
		if v.Master != g.Master.Addr() || !slices.Equal(v.Replicas, []string{g.Replicas[0].Addr()}) {
			t.Errorf("AskSentinel = %+v", v)
		}
		if _, err := AskSentinel(ctxT(t), c, "nosuch"); !errors.Is(err, ErrUnknownMaster) {
			t.Errorf("unknown master: %v", err)
		}
		if si, err := Probe(ctxT(t), c); err != nil || si.Role != RoleSentinel {
			t.Errorf("Probe of a Sentinel = %+v, %v", si, err)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t)
		p := newPool(t, PoolOptions{})
		c := poolClient(t, p, "o", Target{Addr: cl.Masters[0].Addr()})
		shards, err := ClusterShards(ctxT(t), c, false)
		if err != nil {
			t.Fatal(err)
		}
		var masters, want []string
		covered := 0
		for _, s := range shards {
			masters = append(masters, s.Master)
			for _, r := range s.Slots {
				covered += r[1] - r[0] + 1
			}
		}
		for _, m := range cl.Masters {
			want = append(want, m.Addr())
		}
		slices.Sort(want)
		if !slices.Equal(masters, want) || covered != 16384 {
			t.Errorf("shards %+v: masters %v (want %v), %d slots", shards, masters, want, covered)
		}
		slot, err := KeySlot(ctxT(t), c, "{k}:fence")
		if plain, err2 := KeySlot(ctxT(t), c, "k"); err != nil || err2 != nil || slot != plain || slot < 0 || slot > 16383 {
			t.Errorf("KeySlot({k}:fence) = %d, %v; KeySlot(k) = %d, %v", slot, err, plain, err2)
		}
	})
}

func TestPool(t *testing.T) {
	srv := redistest.StartStandalone(t)
	p := NewPool(PoolOptions{PoolSize: 2})
	a, b := p.Session("a"), p.Session("b")
	ca, _ := a.Client(Target{Addr: srv.Addr()})
	cb, _ := b.Client(Target{Addr: srv.Addr()})
	if ca != cb {
		t.Errorf("two owners with the same target got different clients")
	}
	other, _ := b.Client(Target{Addr: srv.Addr(), Credentials: Credentials{Password: "x"}})
	if other == cb {
		t.Errorf("different credentials share a client")
	}
	a.End()
	b.End()
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2", p.Len())
	}
	// b's next round uses only the first target: the other client closes.
	b2 := p.Session("b")
	_, _ = b2.Client(Target{Addr: srv.Addr()})
	b2.End()
	if p.Len() != 1 {
		t.Errorf("Len = %d after b dropped a target, want 1", p.Len())
	}
	p.Release("a")
	if p.Len() != 1 || ca.Ping(ctxT(t)).Err() != nil {
		t.Errorf("a's release closed the client b still uses")
	}
	p.Release("b")
	if p.Len() != 0 || ca.Ping(ctxT(t)).Err() == nil {
		t.Errorf("the client is still open with no owner")
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	if _, err := p.Session("c").Client(Target{Addr: srv.Addr()}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestTLSConfig(t *testing.T) {
	cfg, err := (&TLS{}).Config("redis-0.redis:6379")
	if err != nil || cfg.ServerName != "redis-0.redis" || cfg.RootCAs != nil {
		t.Errorf("tlsConfig = %+v, %v; want ServerName from the address and system roots", cfg, err)
	}
	cfg, err = (&TLS{ServerName: "redis.svc"}).Config("10.0.0.1:6379")
	if err != nil || cfg.ServerName != "redis.svc" {
		t.Errorf("tlsConfig ServerName = %q, %v", cfg.ServerName, err)
	}
	if _, err := (&TLS{CAPEM: []byte("not pem")}).Config("a:1"); !errors.Is(err, ErrBadCA) {
		t.Errorf("bad CA: %v", err)
	}
	a := Credentials{Password: "x", TLS: &TLS{ServerName: "a"}}
	b := Credentials{Password: "x", TLS: &TLS{ServerName: "b"}}
	if a.Fingerprint() == b.Fingerprint() || a.Fingerprint() != (Credentials{Password: "x", TLS: &TLS{ServerName: "a"}}).Fingerprint() {
		t.Errorf("fingerprints do not follow the credentials")
	}
}

// free reports whether h is a free lock's: not held, no fence, nobody in
// line.
func free(h protocol.Holder) bool {
	return !h.Held && h.Identity == "" && !h.FenceSet && h.Line != nil && h.Line.Count == 0
}

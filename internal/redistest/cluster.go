package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	clusterMasters = 3
	// clusterCreateTimeout bounds redis-cli, which checks every second
	// whether the nodes have met.
	clusterCreateTimeout = 60 * time.Second
	// clusterFormTimeout bounds the wait for every node to report the
	// cluster healthy after redis-cli is done.
	clusterFormTimeout = 20 * time.Second
)

// Cluster is a Redis Cluster of three masters sharing the 16384 slots, and
// their replicas if WithClusterReplicas was given.
type Cluster struct {
	Masters  []*Server
	Replicas []*Server
}

// StartCluster starts 3 masters (and WithClusterReplicas(n) replicas per
// master), joins them with `redis-cli --cluster create ... --cluster-yes`,
// and waits until every node reports cluster_state:ok and knows every other
// node, and every replica is in sync.
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	RequireBinaries(t)
	cfg := newConfig(opts)
	nodes := make([]*Server, clusterMasters*(1+cfg.clusterReplicas))
	for i := range nodes {
		nodes[i] = startData(t, cfg, true, clusterConf)
	}
	if err := createCluster(nodes, cfg); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	c := &Cluster{}
	ctx := context.Background()
	// redis-cli decides which nodes become replicas; ask them.
	for _, n := range nodes {
		info, err := n.Info(ctx, "replication")
		if err != nil {
			t.Fatalf("redistest: %s: %v", n, err)
		}
		if info["role"] == "master" {
			c.Masters = append(c.Masters, n)
		} else {
			c.Replicas = append(c.Replicas, n)
		}
	}
	if len(c.Masters) != clusterMasters {
		t.Fatalf("redistest: cluster has %d masters, want %d", len(c.Masters), clusterMasters)
	}
	if err := poll(ctx, clusterFormTimeout, func(ctx context.Context) error {
		return c.formed(ctx, cfg.clusterReplicas)
	}); err != nil {
		t.Fatalf("redistest: cluster did not form: %v", err)
	}
	return c
}

func createCluster(nodes []*Server, cfg config) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(cfg.clusterReplicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, "redis-cli", args...)
	// REDISCLI_AUTH rather than -a, which makes redis-cli warn about
	// passwords on command lines.
	cmd.Env = os.Environ()
	if cfg.password != "" {
		cmd.Env = append(cmd.Env, "REDISCLI_AUTH="+cfg.password)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	return nil
}

// formed returns nil once every node sees a healthy cluster with every node
// in it and replication is up.
func (c *Cluster) formed(ctx context.Context, replicasPerMaster int) error {
	total := strconv.Itoa(len(c.Masters) + len(c.Replicas))
	for _, n := range c.all() {
		admin := n.adminClient()
		text, err := admin.ClusterInfo(ctx).Result()
		_ = admin.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		info := parseInfo(text)
		if info["cluster_state"] != "ok" || info["cluster_known_nodes"] != total {
			return fmt.Errorf("%s: cluster_state %q, cluster_known_nodes %s of %s", n, info["cluster_state"], info["cluster_known_nodes"], total)
		}
	}
	for _, m := range c.Masters {
		info, err := m.Info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		if info["connected_slaves"] != strconv.Itoa(replicasPerMaster) {
			return fmt.Errorf("%s: connected_slaves %s, want %d", m, info["connected_slaves"], replicasPerMaster)
		}
	}
	for _, r := range c.Replicas {
		info, err := r.Info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		if info["master_link_status"] != "up" {
			return fmt.Errorf("%s: master_link_status %q", r, info["master_link_status"])
		}
	}
	return nil
}

func (c *Cluster) all() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Addrs are the addresses of all nodes, masters first.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, n := range c.all() {
		addrs = append(addrs, n.Addr())
	}
	return addrs
}

// Client returns a cluster client seeded with every node, closed in
// t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Password: c.Masters[0].password})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

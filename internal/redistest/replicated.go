package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicationTimeout bounds the wait for replicas to finish their first sync.
const replicationTimeout = 15 * time.Second

// Replicated is a master and its replicas, with Redis's asynchronous
// replication between them.
type Replicated struct {
	Master   *Server
	Replicas []*Server
}

// StartReplicated starts a master and the given number of replicas of it,
// and waits until every replica reports master_link_status:up and the master
// reports connected_slaves equal to replicas.
func StartReplicated(t testing.TB, replicas int, opts ...Option) *Replicated {
	t.Helper()
	RequireBinaries(t)
	master, reps := startGroup(t, newConfig(opts), replicas)
	return &Replicated{Master: master, Replicas: reps}
}

// startGroup starts a master and replicas and waits for replication.
func startGroup(t testing.TB, cfg config, replicas int) (*Server, []*Server) {
	t.Helper()
	master := startData(t, cfg, false)
	reps := make([]*Server, replicas)
	for i := range reps {
		reps[i] = startData(t, cfg, false, func(*Server) []string { return replicaConf(master) })
	}
	if err := poll(context.Background(), replicationTimeout, func(ctx context.Context) error {
		return replicating(ctx, master, reps)
	}); err != nil {
		t.Fatalf("redistest: replication of %s did not come up: %v", master, err)
	}
	return master, reps
}

// replicating returns nil once every replica's link to master is up and
// master counts them all.
func replicating(ctx context.Context, master *Server, replicas []*Server) error {
	for _, r := range replicas {
		info, err := r.Info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		if info["master_port"] != strconv.Itoa(master.port) || info["master_link_status"] != "up" {
			return fmt.Errorf("%s: master_port %q, master_link_status %q", r, info["master_port"], info["master_link_status"])
		}
	}
	info, err := master.Info(ctx, "replication")
	if err != nil {
		return fmt.Errorf("%s: %w", master, err)
	}
	if got := info["connected_slaves"]; got != strconv.Itoa(len(replicas)) {
		return fmt.Errorf("%s: connected_slaves %s, want %d", master, got, len(replicas))
	}
	// After a diskless sync the master counts a replica online (and WAIT
	// counts its acknowledgements) only from its first REPLCONF ACK, up to
	// a second later: a test's first WAIT must not race it.
	for i := range replicas {
		if slave := info["slave"+strconv.Itoa(i)]; !strings.Contains(slave, "state=online") {
			return fmt.Errorf("%s: replica %d is %q, not online yet", master, i, slave)
		}
	}
	return acknowledging(ctx, master, len(replicas))
}

// acknowledging returns nil once n replicas acknowledge a write of the
// master's (WAIT on the writing connection, in one pipeline).
func acknowledging(ctx context.Context, master *Server, n int) error {
	c := master.adminClient()
	defer func() { _ = c.Close() }()
	var wait *redis.Cmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "redistest:sync", "1", time.Second)
		wait = p.Do(ctx, "wait", n, 100)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: a write for WAIT: %w", master, err)
	}
	acked, err := wait.Int64()
	switch {
	case err != nil:
		return fmt.Errorf("%s: WAIT: %w", master, err)
	case acked < int64(n):
		return fmt.Errorf("%s: %d of %d replicas acknowledge writes yet", master, acked, n)
	}
	return nil
}

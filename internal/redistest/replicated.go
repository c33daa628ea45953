package redistest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
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
	return nil
}

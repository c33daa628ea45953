package redisprobe

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Shard is one master of a Redis Cluster with its slots and replicas.
type Shard struct {
	// Master is the master's host:port; "" when the shard has no master
	// (failed and not yet replaced).
	Master string
	// MasterHealthy is false when the cluster marks the master failing.
	MasterHealthy bool
	// Replicas are the replicas' host:port, sorted.
	Replicas []string
	// Slots are the slot ranges served, inclusive.
	Slots [][2]int
}

// Serves reports whether the shard serves slot.
func (s Shard) Serves(slot int) bool {
	for _, r := range s.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// ClusterShards returns a cluster's shards as one node sees them: CLUSTER
// SHARDS (Redis 7.0+), else CLUSTER NODES. tlsPorts picks the TLS port of
// each node (clusters serving TLS). Shards are sorted by master address.
func ClusterShards(ctx context.Context, c *redis.Client, tlsPorts bool) ([]Shard, error) {
	shards, err := c.ClusterShards(ctx).Result()
	if IsUnknownCommand(err) {
		return clusterNodes(ctx, c)
	}
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	var out []Shard
	for _, sh := range shards {
		s := Shard{}
		for _, r := range sh.Slots {
			s.Slots = append(s.Slots, [2]int{int(r.Start), int(r.End)})
		}
		for _, n := range sh.Nodes {
			host := n.Endpoint
			if host == "" || host == "?" {
				host = n.IP
			}
			port := n.Port
			if tlsPorts && n.TLSPort > 0 {
				port = n.TLSPort
			}
			if host == "" || port == 0 {
				continue
			}
			addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
			if n.Role == "master" {
				s.Master, s.MasterHealthy = addr, n.Health == "online"
			} else {
				s.Replicas = append(s.Replicas, addr)
			}
		}
		// A shard without slots and without a master is a left-over
		// entry; a master without slots still counts (it could take some).
		if s.Master == "" && len(s.Slots) == 0 {
			continue
		}
		slices.Sort(s.Replicas)
		out = append(out, s)
	}
	sortShards(out)
	return out, nil
}

// clusterNodes parses CLUSTER NODES (Redis before 7.0).
func clusterNodes(ctx context.Context, c *redis.Client) ([]Shard, error) {
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	return parseClusterNodes(text), nil
}

// parseClusterNodes reads CLUSTER NODES' text.
func parseClusterNodes(text string) []Shard {
	byID := map[string]*Shard{}
	type rep struct{ master, addr string }
	var reps []rep
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		id, addr, flags, masterID := f[0], f[1], f[2], f[3]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		if strings.Contains(flags, "noaddr") || strings.Contains(flags, "handshake") {
			continue
		}
		healthy := !strings.Contains(flags, "fail")
		switch {
		case strings.Contains(flags, "master"):
			s := &Shard{Master: addr, MasterHealthy: healthy}
			for _, r := range f[8:] {
				if strings.HasPrefix(r, "[") { // migrating/importing slot
					continue
				}
				lo, hi, isRange := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if isRange {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 == nil && err2 == nil {
					s.Slots = append(s.Slots, [2]int{a, b})
				}
			}
			byID[id] = s
		case strings.Contains(flags, "slave"):
			reps = append(reps, rep{master: masterID, addr: addr})
		}
	}
	for _, r := range reps {
		if s := byID[r.master]; s != nil {
			s.Replicas = append(s.Replicas, r.addr)
		}
	}
	var out []Shard
	for _, s := range byID {
		slices.Sort(s.Replicas)
		out = append(out, *s)
	}
	sortShards(out)
	return out
}

func sortShards(s []Shard) {
	slices.SortFunc(s, func(a, b Shard) int { return strings.Compare(a.Master, b.Master) })
}

// KeySlot asks a cluster node for the hash slot of key (CLUSTER KEYSLOT).
func KeySlot(ctx context.Context, c *redis.Client, key string) (int, error) {
	n, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("CLUSTER KEYSLOT: %w", err)
	}
	return int(n), nil
}

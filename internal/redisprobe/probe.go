package redisprobe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Role is what a server is, from INFO.
type Role string

const (
	// RoleMaster accepts writes.
	RoleMaster Role = "master"
	// RoleReplica replicates a master.
	RoleReplica Role = "replica"
	// RoleSentinel is a Redis Sentinel.
	RoleSentinel Role = "sentinel"
)

// Replica is one replica a master lists in INFO replication.
type Replica struct {
	// Addr is ip:port as the master sees it (or replica-announce-ip).
	Addr string
	// Online is true when the replica finished its sync (state=online).
	Online bool
	// Lag is the seconds since the replica's last acknowledgement.
	Lag int
}

// ServerInfo is what one INFO tells about a server.
type ServerInfo struct {
	Role Role
	// Version is redis_version: the Redis version the server is
	// compatible with (Valkey 8 reports 7.2.4 there).
	Version string
	// Server names the server and its own version, e.g. "redis 7.0.15",
	// "valkey 8.0.1": INFO's server_name (Valkey; absent on Redis) and
	// <server_name>_version.
	Server string
	// RunID identifies the server process: two addresses with the same
	// run_id reach the same server.
	RunID string
	// ReplID is the replication ID; a master and its replicas share it.
	ReplID string
	// ConnectedReplicas is connected_slaves (masters).
	ConnectedReplicas int
	// Replicas are the replicas a master lists.
	Replicas []Replica
	// MasterAddr is master_host:master_port (replicas).
	MasterAddr string
	// MasterLinkUp is master_link_status:up (replicas).
	MasterLinkUp bool
	// AOFEnabled is aof_enabled:1.
	AOFEnabled bool
	// MaxMemoryPolicy is maxmemory_policy, e.g. noeviction.
	MaxMemoryPolicy string
	// ClusterEnabled is cluster_enabled:1.
	ClusterEnabled bool
	// ConnectedClients is connected_clients.
	ConnectedClients int
	// UsedMemory is used_memory and MaxMemory maxmemory, in bytes; 0
	// MaxMemory is no limit.
	UsedMemory, MaxMemory int64
}

// MemoryUsed is UsedMemory as a fraction of MaxMemory, and false when the
// server has no limit.
func (si ServerInfo) MemoryUsed() (float64, bool) {
	if si.MaxMemory <= 0 {
		return 0, false
	}
	return float64(si.UsedMemory) / float64(si.MaxMemory), true
}

// Probe sends PING and INFO (the default sections: server, clients, memory,
// persistence, replication, cluster... one round trip that every Redis
// version and Sentinel answers) and parses the fields the controller uses.
func Probe(ctx context.Context, c *redis.Client) (ServerInfo, error) {
	if err := c.Ping(ctx).Err(); err != nil {
		return ServerInfo{}, err
	}
	text, err := c.Info(ctx).Result()
	if err != nil {
		return ServerInfo{}, fmt.Errorf("INFO: %w", err)
	}
	return ParseInfo(text), nil
}

// serverName is what the server says it is: "<server_name> <its
// version>", where Redis, which has no server_name, is "redis".
func serverName(f map[string]string) string {
	name, version := f["server_name"], f["redis_version"]
	if name == "" {
		name = "redis"
	} else if v := f[name+"_version"]; v != "" {
		version = v
	}
	if version == "" {
		return ""
	}
	return name + " " + version
}

// ParseInfo reads the fields of ServerInfo from INFO's text.
func ParseInfo(text string) ServerInfo {
	f := map[string]string{}
	var slaves []string
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		f[k] = v
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "ip=") {
			slaves = append(slaves, v)
		}
	}
	si := ServerInfo{
		Version:          f["redis_version"],
		Server:           serverName(f),
		RunID:            f["run_id"],
		ReplID:           f["master_replid"],
		AOFEnabled:       f["aof_enabled"] == "1",
		MaxMemoryPolicy:  f["maxmemory_policy"],
		ClusterEnabled:   f["cluster_enabled"] == "1",
		ConnectedClients: atoi(f["connected_clients"]),
		UsedMemory:       int64(atoi(f["used_memory"])),
		MaxMemory:        int64(atoi(f["maxmemory"])),
	}
	switch {
	case f["redis_mode"] == "sentinel":
		si.Role = RoleSentinel
	case f["role"] == "master":
		si.Role = RoleMaster
	case f["role"] == "slave":
		si.Role = RoleReplica
	}
	si.ConnectedReplicas = atoi(f["connected_slaves"])
	if si.Role == RoleReplica && f["master_host"] != "" {
		si.MasterAddr = net.JoinHostPort(f["master_host"], f["master_port"])
		si.MasterLinkUp = f["master_link_status"] == "up"
	}
	for _, s := range slaves {
		kv := map[string]string{}
		for part := range strings.SplitSeq(s, ",") {
			if k, v, ok := strings.Cut(part, "="); ok {
				kv[k] = v
			}
		}
		if kv["ip"] == "" || kv["port"] == "" {
			continue
		}
		si.Replicas = append(si.Replicas, Replica{
			Addr:   net.JoinHostPort(kv["ip"], kv["port"]),
			Online: kv["state"] == "online",
			Lag:    atoi(kv["lag"]),
		})
	}
	return si
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

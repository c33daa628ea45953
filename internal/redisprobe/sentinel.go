package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUnknownMaster is returned when the Sentinel does not monitor a master of
// that name.
var ErrUnknownMaster = errors.New("sentinel does not know the master")

// SentinelView is what one Sentinel says about a monitored master.
type SentinelView struct {
	// Master is the master's host:port (SENTINEL GET-MASTER-ADDR-BY-NAME).
	Master string
	// Replicas are the replicas' host:port (SENTINEL REPLICAS), sorted.
	Replicas []string
}

// AskSentinel asks a Sentinel for the current master of name and its
// replicas.
func AskSentinel(ctx context.Context, c *redis.Client, name string) (SentinelView, error) {
	hp, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name).StringSlice()
	if errors.Is(err, redis.Nil) || (err == nil && len(hp) != 2) {
		return SentinelView{}, fmt.Errorf("%w %q", ErrUnknownMaster, name)
	}
	if err != nil {
		return SentinelView{}, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	v := SentinelView{Master: net.JoinHostPort(hp[0], hp[1])}
	reps, err := c.Do(ctx, "SENTINEL", "REPLICAS", name).Slice()
	if err != nil {
		return SentinelView{}, fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	for _, r := range reps {
		fields, ok := r.([]any)
		if !ok {
			continue
		}
		kv := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].(string)
			val, _ := fields[i+1].(string)
			kv[k] = val
		}
		if kv["ip"] == "" || kv["port"] == "" {
			continue
		}
		addr := net.JoinHostPort(kv["ip"], kv["port"])
		// A replica Sentinel has seen promoted (the old master after a
		// failover, before Sentinel reconfigures it) can also be listed;
		// the master itself is never a replica.
		if addr == v.Master || strings.Contains(kv["flags"], "master") {
			continue
		}
		v.Replicas = append(v.Replicas, addr)
	}
	slices.Sort(v.Replicas)
	v.Replicas = slices.Compact(v.Replicas)
	return v, nil
}

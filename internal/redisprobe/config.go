package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ReplicaSettings are a master's replica guard: it refuses writes unless
// MinReplicasToWrite replicas acknowledged within MinReplicasMaxLag seconds.
// Either one being 0 turns the guard off (as in Redis).
type ReplicaSettings struct {
	MinReplicasToWrite int
	MinReplicasMaxLag  int
}

// Enforced reports whether Redis enforces the guard at all.
func (s ReplicaSettings) Enforced() bool { return s.MinReplicasToWrite > 0 && s.MinReplicasMaxLag > 0 }

// AtLeast reports whether s is at least as strict as want: as many replicas
// or more, with a lag bound no looser. A want that asks for no replicas is
// met by anything.
func (s ReplicaSettings) AtLeast(want ReplicaSettings) bool {
	if want.MinReplicasToWrite <= 0 {
		return true
	}
	return s.Enforced() && s.MinReplicasToWrite >= want.MinReplicasToWrite && s.MinReplicasMaxLag <= want.MinReplicasMaxLag
}

// Stricter returns the strictest combination of s and o: the larger replica
// count and the smaller (non-zero) lag.
func (s ReplicaSettings) Stricter(o ReplicaSettings) ReplicaSettings {
	out := ReplicaSettings{MinReplicasToWrite: max(s.MinReplicasToWrite, o.MinReplicasToWrite)}
	switch {
	case s.MinReplicasMaxLag <= 0:
		out.MinReplicasMaxLag = o.MinReplicasMaxLag
	case o.MinReplicasMaxLag <= 0:
		out.MinReplicasMaxLag = s.MinReplicasMaxLag
	default:
		out.MinReplicasMaxLag = min(s.MinReplicasMaxLag, o.MinReplicasMaxLag)
	}
	return out
}

func (s ReplicaSettings) String() string {
	return fmt.Sprintf("min-replicas-to-write %d, min-replicas-max-lag %d", s.MinReplicasToWrite, s.MinReplicasMaxLag)
}

// ServerConfig is what CONFIG GET tells the controller.
type ServerConfig struct {
	Replica ReplicaSettings
	// Save is the RDB "save" setting; "" means no RDB snapshots.
	Save string
}

// ReadConfig reads min-replicas-to-write, min-replicas-max-lag and save with
// CONFIG GET (one round trip). A disabled, renamed or ACL-denied CONFIG gives
// an error matching ErrConfigUnavailable.
func ReadConfig(ctx context.Context, c *redis.Client) (ServerConfig, error) {
	var toWrite, maxLag, save *redis.MapStringStringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		toWrite = p.ConfigGet(ctx, "min-replicas-to-write")
		maxLag = p.ConfigGet(ctx, "min-replicas-max-lag")
		save = p.ConfigGet(ctx, "save")
		return nil
	})
	if err != nil {
		return ServerConfig{}, configErr("CONFIG GET", err)
	}
	var sc ServerConfig
	var perr error
	if sc.Replica.MinReplicasToWrite, perr = configInt(toWrite.Val(), "min-replicas-to-write"); perr != nil {
		return ServerConfig{}, perr
	}
	if sc.Replica.MinReplicasMaxLag, perr = configInt(maxLag.Val(), "min-replicas-max-lag"); perr != nil {
		return ServerConfig{}, perr
	}
	sc.Save = save.Val()["save"]
	return sc, nil
}

func configInt(m map[string]string, name string) (int, error) {
	v, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("%w: CONFIG GET %s returned nothing", ErrConfigUnavailable, name)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("CONFIG GET %s: %q is not a number", name, v)
	}
	return n, nil
}

// ApplyReplicaSettings sets min-replicas-max-lag and min-replicas-to-write
// with CONFIG SET (one round trip, lag first so the guard never starts with
// a looser lag than asked).
func ApplyReplicaSettings(ctx context.Context, c *redis.Client, s ReplicaSettings) error {
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ConfigSet(ctx, "min-replicas-max-lag", strconv.Itoa(s.MinReplicasMaxLag))
		p.ConfigSet(ctx, "min-replicas-to-write", strconv.Itoa(s.MinReplicasToWrite))
		return nil
	})
	if err != nil {
		return configErr("CONFIG SET", err)
	}
	return nil
}

func configErr(op string, err error) error {
	if IsConfigUnavailable(err) {
		return fmt.Errorf("%w: %s: %w", ErrConfigUnavailable, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// ErrConfigUnavailable is returned, wrapped, when CONFIG is disabled, renamed
// or denied by ACL.
var ErrConfigUnavailable = errors.New("CONFIG is unavailable")

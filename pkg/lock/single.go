package lock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// single speaks the protocol to one Redis deployment through one go-redis
// client: standalone, Sentinel failover client, or Cluster client.
type single struct {
	client     redis.UniversalClient
	identity   string
	fencing    bool
	acks       int
	ackTimeout time.Duration
}

func newSingle(client redis.UniversalClient, c *config) (*single, error) {
	if client == nil {
		return nil, invalidConfig("nil redis client")
	}
	if c.replicaAcks > 0 {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, invalidConfig("WithReplicaAck needs a *redis.Client or *redis.ClusterClient, got %T", client)
		}
	}
	return &single{client: client, identity: c.identity, fencing: c.fencing, acks: c.replicaAcks, ackTimeout: c.replicaWait}, nil
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

func (s *single) close(context.Context) {}

func (s *single) acquire(ctx context.Context, key, value string, ttl time.Duration) (attempt, error) {
	if s.acks == 0 {
		return s.runAcquire(ctx, s.client, key, value, ttl)
	}
	// WAIT counts the replication of this connection's writes, so the
	// acquisition and the WAIT must share one connection.
	conn, err := s.stickyConn(ctx, key)
	if err != nil {
		return attempt{}, err
	}
	defer conn.Close()
	a, err := s.runAcquire(ctx, conn, key, value, ttl)
	if err != nil || !a.acquired {
		return a, err
	}
	acked, err := conn.Wait(ctx, s.acks, s.ackTimeout).Result()
	if err == nil && acked >= int64(s.acks) {
		return a, nil
	}
	if _, rerr := runRelease(ctx, conn, key, value); rerr != nil {
		return attempt{}, fmt.Errorf("lock: releasing unreplicated %q: %w", key, rerr)
	}
	if err != nil {
		return attempt{}, fmt.Errorf("%w: WAIT on %q: %w", ErrNotReplicated, key, err)
	}
	return attempt{}, fmt.Errorf("%w: %d of %d replicas acknowledged %q within %v", ErrNotReplicated, acked, s.acks, key, s.ackTimeout)
}

// stickyConn returns a dedicated connection to the master that owns key.
func (s *single) stickyConn(ctx context.Context, key string) (*redis.Conn, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Conn(), nil
	case *redis.ClusterClient:
		master, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("lock: finding the master of %q: %w", key, err)
		}
		return master.Conn(), nil
	}
	return nil, invalidConfig("WithReplicaAck needs a *redis.Client or *redis.ClusterClient, got %T", s.client)
}

func (s *single) runAcquire(ctx context.Context, c redis.Scripter, key, value string, ttl time.Duration) (attempt, error) {
	fencing := "0"
	if s.fencing {
		fencing = "1"
	}
	res, err := acquireScript.Run(ctx, c, []string{key, FenceKey(key), EventsChannel(key)},
		value, ttlMillis(ttl), fencing, s.identity).Int64Slice()
	if err != nil {
		return attempt{}, fmt.Errorf("lock: acquire %q: %w", key, err)
	}
	if len(res) != 2 {
		return attempt{}, fmt.Errorf("lock: acquire %q: unexpected reply %v", key, res)
	}
	if res[0] == 1 {
		return attempt{acquired: true, fence: uint64(res[1])}, nil
	}
	return attempt{holderTTL: time.Duration(res[1]) * time.Millisecond}, nil
}

func (s *single) renew(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.client, []string{key}, value, ttlMillis(ttl)).Int64()
	if err != nil {
		return false, fmt.Errorf("lock: renew %q: %w", key, err)
	}
	return n == 1, nil
}

func (s *single) release(ctx context.Context, key, value string) (bool, error) {
	return runRelease(ctx, s.client, key, value)
}

func runRelease(ctx context.Context, c redis.Scripter, key, value string) (bool, error) {
	n, err := releaseScript.Run(ctx, c, []string{key, EventsChannel(key)}, value).Int64()
	if err != nil {
		return false, fmt.Errorf("lock: release %q: %w", key, err)
	}
	return n == 1, nil
}

// ttlMillis rounds up so a sub-millisecond remainder never becomes PX 0.
func ttlMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// raiseFence sets the key's fence counter to at least fence.
func (s *single) raiseFence(ctx context.Context, key string, fence uint64) (bool, error) {
	return RaiseFence(ctx, s.client, key, fence)
}

// RaiseFence sets key's fence counter to at least fence and reports whether
// it was raised. It never lowers a counter. The controller uses it to keep
// the counter above the highest fence it has seen.
func RaiseFence(ctx context.Context, c redis.Scripter, key string, fence uint64) (bool, error) {
	n, err := raiseFenceScript.Run(ctx, c, []string{FenceKey(key)}, strconv.FormatUint(fence, 10)).Int()
	if err != nil {
		return false, fmt.Errorf("lock: raising the fence of %q: %w", key, err)
	}
	return n == 1, nil
}

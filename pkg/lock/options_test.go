package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

func TestConstructorRefusesBadConfiguration(t *testing.T) {
	// No I/O happens in New: the address need not exist.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	closeAtEnd(t, client)
	slowReads := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: time.Second})
	closeAtEnd(t, slowReads)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	closeAtEnd(t, ring)

	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   []lock.Option
	}{
		{"nil client", nil, nil},
		{"ttl too short", client, []lock.Option{lock.WithTTL(time.Millisecond)}},
		{"renew interval equal to ttl", client, []lock.Option{lock.WithTTL(time.Second), lock.WithRenewInterval(time.Second)}},
		{"negative renew interval", client, []lock.Option{lock.WithRenewInterval(-time.Second)}},
		// ttl 100ms leaves 97ms of validity: a renewal every 99ms comes too late.
		{"renew interval leaving no room for a renewal", client, []lock.Option{lock.WithTTL(100 * time.Millisecond), lock.WithRenewInterval(99 * time.Millisecond)}},
		{"renew interval just above half the validity", client, []lock.Option{lock.WithTTL(100 * time.Millisecond), lock.WithRenewInterval(48*time.Millisecond + 600*time.Microsecond)}},
		{"drift factor too large", client, []lock.Option{lock.WithDriftFactor(0.5)}},
		{"negative drift factor", client, []lock.Option{lock.WithDriftFactor(-0.1)}},
		{"max hold below ttl", client, []lock.Option{lock.WithTTL(time.Minute), lock.WithMaxHold(time.Second)}},
		{"empty identity", client, []lock.Option{lock.WithIdentity("")}},
		{"identity with space", client, []lock.Option{lock.WithIdentity("a b")}},
		{"backoff inverted", client, []lock.Option{lock.WithRetryBackoff(time.Second, time.Millisecond)}},
		{"backoff zero", client, []lock.Option{lock.WithRetryBackoff(0, time.Second)}},
		{"negative replica acks", client, []lock.Option{lock.WithReplicaAck(-1, time.Second)}},
		{"replica acks without timeout", client, []lock.Option{lock.WithReplicaAck(1, 0)}},
		{"replica acks on a ring", ring, []lock.Option{lock.WithReplicaAck(1, time.Second)}},
		{"replica ack timeout not below the read timeout", slowReads, []lock.Option{lock.WithReplicaAck(1, time.Second)}},
		{"nil clock", client, []lock.Option{lock.WithClock(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lock.New(tt.client, tt.opts...)
			if !errors.Is(err, lock.ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", l, err)
			}
		})
	}
}

func TestMisuseReturnsSentinelErrors(t *testing.T) {
	_, client := startRedis(t)
	l, err := lock.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 10*time.Second)

	if _, err := l.TryAcquire(ctx, "bad key"); !errors.Is(err, lock.ErrInvalidConfig) {
		t.Errorf("TryAcquire(bad key) = %v, want ErrInvalidConfig", err)
	}
	if _, err := l.Acquire(ctx, ""); !errors.Is(err, lock.ErrInvalidConfig) {
		t.Errorf("Acquire(empty key) = %v, want ErrInvalidConfig", err)
	}
	lease, err := l.TryAcquire(ctx, "misuse")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrReleased) {
		t.Errorf("second Release = %v, want ErrReleased", err)
	}
	if err := lease.Renew(ctx); !errors.Is(err, lock.ErrReleased) {
		t.Errorf("Renew after Release = %v, want ErrReleased", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := l.TryAcquire(ctx, "misuse"); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("TryAcquire after Close = %v, want ErrClosed", err)
	}
	if _, err := l.Acquire(context.Background(), "misuse"); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
}

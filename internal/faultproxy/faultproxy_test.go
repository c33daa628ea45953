package faultproxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/redistest"
)

func TestLatencyAndBlackHole(t *testing.T) {
	srv := redistest.StartStandalone(t)
	p := faultproxy.New(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 2 * time.Second, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	ctx := context.Background()

	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Latency(300 * time.Millisecond)
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("PING took %v through 300ms of latency", d)
	}
	p.Reset()
	p.BlackHole()
	short := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer func() { _ = short.Close() }()
	if err := short.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered through a black hole")
	}
	p.Reset()
	// Connections open during the black hole may be cut when it is lifted;
	// new ones work.
	after := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer func() { _ = after.Close() }()
	if err := after.Ping(ctx).Err(); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

func TestCutAndRestore(t *testing.T) {
	srv := redistest.StartStandalone(t)
	p := faultproxy.New(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	p.Cut()
	start := time.Now()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered on a connection opened before the cut")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered on a new connection during the cut")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the cut took %v to show: connections should be closed and refused, not left hanging", d)
	}

	p.Restore()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

func TestRedirect(t *testing.T) {
	first, second := redistest.StartStandalone(t), redistest.StartStandalone(t)
	ctx := context.Background()
	if err := second.Client(t).Set(ctx, "which", "second", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p := faultproxy.New(t, first.Addr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer func() { _ = c.Close() }()
	if n := c.Exists(ctx, "which").Val(); n != 0 {
		t.Fatalf("EXISTS which = %d on the first server", n)
	}
	p.Redirect(second.Addr())
	if got := c.Get(ctx, "which").Val(); got != "second" {
		t.Fatalf("GET which = %q after Redirect, want the second server's value", got)
	}
}

package redistest

import (
	"fmt"
	"testing"
	"time"
)

func TestJumpClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// start returns the node whose clock jumps and the one observed.
		start func(t *testing.T) (jumper, observed *Server)
	}{
		{
			name: "standalone",
			start: func(t *testing.T) (*Server, *Server) {
				s := StartStandalone(t)
				return s, s
			},
		},
		{
			name: "a master's replica follows its jump",
			start: func(t *testing.T) (*Server, *Server) {
				r := StartReplicated(t, 1)
				return r.Master, r.Replicas[0]
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			jumper, observed := tc.start(t)
			ctx := t.Context()
			c := jumper.Client(t)
			for _, err := range []error{
				c.Set(ctx, "long", "1", 10*time.Second).Err(),
				c.Set(ctx, "short", "1", 2*time.Second).Err(),
				c.Set(ctx, "forever", "1", 0).Err(),
			} {
				if err != nil {
					t.Fatalf("SET: %v", err)
				}
			}

			if err := jumper.JumpClock(ctx, 6*time.Second); err != nil {
				t.Fatalf("JumpClock: %v", err)
			}
			if jumper != observed {
				if err := c.Wait(ctx, 1, 5000).Err(); err != nil {
					t.Fatalf("WAIT: %v", err)
				}
			}

			o := observed.Client(t)
			// 10 s - 6 s = 4 s left, less the few ms the test took.
			if ttl, err := o.PTTL(ctx, "long").Result(); err != nil || ttl <= 2*time.Second || ttl > 4*time.Second {
				t.Errorf("PTTL long = %v, %v; want just under 4s", ttl, err)
			}
			if n, err := o.Exists(ctx, "short").Result(); err != nil || n != 0 {
				t.Errorf("EXISTS short = %d, %v; want 0 (2s TTL, 6s jump)", n, err)
			}
			if ttl, err := o.TTL(ctx, "forever").Result(); err != nil || ttl != -1 {
				t.Errorf("TTL forever = %v, %v; want -1 (no TTL)", ttl, err)
			}
			if v, err := o.Get(ctx, "forever").Result(); err != nil || v != "1" {
				t.Errorf("GET forever = %q, %v; want 1", v, err)
			}
		})
	}
}

func TestJumpClockOnlyLeapsForward(t *testing.T) {
	t.Parallel()
	s := StartStandalone(t)
	ctx := t.Context()
	if err := s.Client(t).Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
		if err := s.JumpClock(ctx, d); err == nil {
			t.Errorf("JumpClock(%v) succeeded; want an error", d)
		}
	}
	if ttl, err := s.Client(t).PTTL(ctx, "k").Result(); err != nil || ttl <= 5*time.Second {
		t.Errorf("PTTL after refused jumps = %v, %v; want the TTL untouched", ttl, err)
	}
}

func TestJumpClockRefusedByReplica(t *testing.T) {
	t.Parallel()
	r := StartReplicated(t, 1)
	ctx := t.Context()
	if err := r.Master.Client(t).Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Replicas[0].JumpClock(ctx, time.Second); err == nil {
		t.Fatal("JumpClock on a read-only replica succeeded")
	}
	if ttl, err := r.Master.Client(t).PTTL(ctx, "k").Result(); err != nil || ttl <= 5*time.Second {
		t.Errorf("PTTL on the master = %v, %v; want the TTL untouched", ttl, err)
	}
}

// TestJumpClockOnClusterNode checks that the script may touch keys of many
// slots on one cluster node, which Redis refuses to scripts by default.
func TestJumpClockOnClusterNode(t *testing.T) {
	t.Parallel()
	c := StartCluster(t)
	ctx := t.Context()
	cc := c.Client(t)
	node := c.Masters[0]
	slots := map[int64]bool{}
	var keys []string
	for i := 0; len(keys) < 3; i++ {
		key := fmt.Sprintf("k%d", i)
		owner, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if owner.Options().Addr == node.Addr() && !slots[slot] {
			slots[slot] = true
			keys = append(keys, key)
		}
	}
	for _, k := range keys {
		if err := cc.Set(ctx, k, "1", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}

	if err := node.JumpClock(ctx, 6*time.Second); err != nil {
		t.Fatalf("JumpClock: %v", err)
	}
	for _, k := range keys {
		if ttl, err := cc.PTTL(ctx, k).Result(); err != nil || ttl <= 2*time.Second || ttl > 4*time.Second {
			t.Errorf("PTTL %s = %v, %v; want just under 4s", k, ttl, err)
		}
	}
}

package redistest

import (
	"strconv"
	"strings"
	"testing"
)

func TestStartReplicated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		replicas int
		opts     []Option
	}{
		{name: "two replicas", replicas: 2},
		// requirepass on every node: replicas must authenticate to sync.
		{name: "with password", replicas: 1, opts: []Option{WithPassword("s3cret")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := StartReplicated(t, tc.replicas, tc.opts...)
			ctx := t.Context()
			if len(r.Replicas) != tc.replicas {
				t.Fatalf("got %d replicas, want %d", len(r.Replicas), tc.replicas)
			}
			m := r.Master.Client(t)
			if err := m.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("SET on master: %v", err)
			}
			if n, err := m.Wait(ctx, tc.replicas, 5000).Result(); err != nil || n != int64(tc.replicas) {
				t.Fatalf("WAIT = %d, %v; want %d acks", n, err, tc.replicas)
			}
			for _, rep := range r.Replicas {
				c := rep.Client(t)
				if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
					t.Errorf("%s: GET k = %q, %v; want v", rep, got, err)
				}
				info, err := rep.Info(ctx, "replication")
				if err != nil {
					t.Fatal(err)
				}
				if info["role"] != "slave" || info["master_port"] != strconv.Itoa(r.Master.Port()) {
					t.Errorf("%s: role %q master_port %q; want a replica of %d", rep, info["role"], info["master_port"], r.Master.Port())
				}
				if err := c.Set(ctx, "k", "w", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
					t.Errorf("%s: SET on replica: %v; want READONLY", rep, err)
				}
			}
		})
	}
}

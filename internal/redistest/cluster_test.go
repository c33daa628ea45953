package redistest

import (
	"fmt"
	"testing"
)

func TestStartCluster(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		opts              []Option
		replicasPerMaster int
	}{
		{name: "three masters"},
		{name: "one replica per master", opts: []Option{WithClusterReplicas(1)}, replicasPerMaster: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := StartCluster(t, tc.opts...)
			ctx := t.Context()
			if len(c.Masters) != 3 || len(c.Replicas) != 3*tc.replicasPerMaster {
				t.Fatalf("%d masters and %d replicas, want 3 and %d", len(c.Masters), len(c.Replicas), 3*tc.replicasPerMaster)
			}
			if got := len(c.Addrs()); got != 3*(1+tc.replicasPerMaster) {
				t.Errorf("Addrs() has %d entries", got)
			}
			for _, n := range c.all() {
				text, err := n.Client(t).ClusterInfo(ctx).Result()
				if err != nil {
					t.Fatalf("%s: CLUSTER INFO: %v", n, err)
				}
				if info := parseInfo(text); info["cluster_state"] != "ok" || info["cluster_slots_ok"] != "16384" {
					t.Errorf("%s: cluster_state %q, cluster_slots_ok %q", n, info["cluster_state"], info["cluster_slots_ok"])
				}
			}

			cc := c.Client(t)
			const keys = 60
			for i := range keys {
				if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
					t.Fatalf("SET through the cluster client: %v", err)
				}
			}
			for i := range keys {
				if got, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Int(); err != nil || got != i {
					t.Fatalf("GET key:%d = %d, %v", i, got, err)
				}
			}
			// The keys are spread over the masters by slot.
			total, holders := int64(0), 0
			for _, m := range c.Masters {
				n, err := m.Client(t).DBSize(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				total += n
				if n > 0 {
					holders++
				}
			}
			if total != keys || holders < 2 {
				t.Errorf("masters hold %d keys in total on %d nodes; want %d over at least 2", total, holders, keys)
			}
		})
	}
}

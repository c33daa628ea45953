package controllers

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// BenchmarkThousandLocks measures the controller at scale: 1,000
// DistributedLocks spread over 10 redis-servers, with the manager's default
// probe interval (10s) and concurrency (4). It reports the time until all
// are Ready, reconciles per second (until Ready, and in the steady state
// after), and the client connections each Redis server sees. It asserts
// nothing about speed; it fails only if the locks never become Ready.
//
//	go test -run '^$' -bench ThousandLocks -benchtime 1x ./controllers/
func BenchmarkThousandLocks(b *testing.B) {
	const (
		locks   = 1000
		servers = 10
		steady  = 20 * time.Second
	)
	for b.Loop() {
		nodes := redistest.StartNodes(b, servers)
		h := newHarness(b, harnessOptions{probeInterval: DefaultProbeInterval, concurrency: 4, discardLogs: true})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()

		start := time.Now()
		createLocks(ctx, b, h, locks, func(i int) v1alpha1.DistributedLockSpec { return standaloneSpec(nodes[i%servers].Addr()) })
		created := time.Since(start)

		ready := 0
		for ready < locks {
			if ctx.Err() != nil {
				b.Fatalf("only %d of %d locks Ready after %v", ready, locks, time.Since(start))
			}
			time.Sleep(250 * time.Millisecond)
			var list v1alpha1.DistributedLockList
			if err := h.c.List(ctx, &list, client.InNamespace(h.ns)); err != nil {
				b.Fatal(err)
			}
			ready = 0
			for i := range list.Items {
				if isReady(&list.Items[i]) == nil {
					ready++
				}
			}
		}
		allReady := time.Since(start)
		rampReconciles := h.totalReconciles()

		// Steady state: every lock probed every ~10s, no status writes.
		before := h.totalReconciles()
		time.Sleep(steady) // the measurement window
		steadyRate := float64(h.totalReconciles()-before) / steady.Seconds()

		var conns []int
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr()})
			info, err := c.Info(ctx, "clients").Result()
			_ = c.Close()
			if err != nil {
				b.Fatal(err)
			}
			v := parseField(info, "connected_clients")
			conns = append(conns, v-1) // minus this INFO's own connection
		}
		b.ReportMetric(created.Seconds(), "s-to-create")
		b.ReportMetric(allReady.Seconds(), "s-to-all-ready")
		b.ReportMetric(float64(rampReconciles)/allReady.Seconds(), "reconciles/s-ramp")
		b.ReportMetric(steadyRate, "reconciles/s-steady")
		b.ReportMetric(float64(maxInt(conns)), "max-conns/server")
		b.Logf("%d locks on %d servers: created in %v, all Ready after %v; %d reconciles until Ready (%.0f/s), %.0f/s steady; controller connections per server %v; pooled clients %d",
			locks, servers, created.Round(time.Millisecond), allReady.Round(time.Millisecond), rampReconciles,
			float64(rampReconciles)/allReady.Seconds(), steadyRate, conns, h.pool.Len())
	}
}

func (h *harness) totalReconciles() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, c := range h.reconciles {
		n += c.Load()
	}
	return n
}

func parseField(info, name string) int {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// BenchmarkHostileTenants is issue 25's measurement: 1,000 locks on a
// LockStore while one tenant stores 64 MiB values under four of their keys
// and another namespace's inline locks point at a server whose replies
// announce 2^50 bytes and at one that lists 3,000 replicas. Over a steady
// window (probe interval 2s) it reports the process's resident memory,
// live heap and goroutines, the bytes the store's server sent, and how
// long a new holder takes to show in status; it fails if a lock on the
// store stops being Ready.
//
//	go test -run '^$' -bench HostileTenants -benchtime 1x -timeout 20m ./controllers/
func BenchmarkHostileTenants(b *testing.B) {
	const (
		locks  = 1000
		steady = 30 * time.Second
		mib    = 1 << 20
	)
	for b.Loop() {
		srv := redistest.StartStandalone(b)
		h := newHarness(b, harnessOptions{probeInterval: 2 * time.Second, concurrency: scaleConcurrency(), discardLogs: true, startLater: true, namespaces: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		ls := &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "shared"},
			Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}
		if err := h.c.Create(ctx, ls); err != nil {
			b.Fatal(err)
		}
		createLocks(ctx, b, h, locks, func(int) v1alpha1.DistributedLockSpec {
			return onStore(v1alpha1.StoreKindLockStore, ls.Name, "")
		})
		ready := watchReady(ctx, b, h)
		h.start()
		ready.waitAllReady(ctx, b, locks)

		admin := srv.Client(b)
		for i := range 4 {
			if err := admin.Set(ctx, fmt.Sprintf("%s/lock-%05d", h.ns, i), strings.Repeat("v", 64*mib), 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		attacker := h.extra[0]
		hostile := startHostileRedis(b, "hostile", func([]string) (string, bool) { return "$1125899906842624\r\n", true })
		lines := []string{"# Replication", "role:master", "run_id:scanner"}
		for i := range 3000 {
			lines = append(lines, fmt.Sprintf("slave%d:ip=10.0.%d.%d,port=6379,state=online,offset=1,lag=0", i, i/250, i%250+1))
		}
		info := bulk(strings.Join(lines, "\r\n") + "\r\n")
		scanner := startHostileRedis(b, "scanner", func(args []string) (string, bool) { return info, strings.EqualFold(args[0], "INFO") })
		for name, spec := range map[string]v1alpha1.RedisSpec{
			"hostile": {Mode: v1alpha1.RedisModeStandalone, Addresses: []string{hostile.Addr()}},
			"scanner": {Mode: v1alpha1.RedisModeReplicated, Addresses: []string{scanner.Addr()}},
		} {
			h.createIn(attacker, name, v1alpha1.DistributedLockSpec{Redis: spec})
		}

		sent := func() int64 {
			info, err := srv.Info(ctx, "stats")
			if err != nil {
				b.Fatal(err)
			}
			n, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
			return n
		}
		sentBefore, wallBefore := sent(), time.Now()
		worst := locks
		for time.Since(wallBefore) < steady {
			worst = min(worst, ready.count())
			time.Sleep(100 * time.Millisecond)
		}
		sentRate := float64(sent()-sentBefore) / time.Since(wallBefore).Seconds()
		rss, live, goroutines := residentMiB(b), liveHeapMiB(), runtime.NumGoroutine()

		// A new holder of one lock, written as the library writes it.
		value, err := protocol.NewValue("fresh-pod:1")
		if err != nil {
			b.Fatal(err)
		}
		key := h.ns + "/lock-00500"
		if err := admin.Set(ctx, key, value, time.Minute).Err(); err != nil {
			b.Fatal(err)
		}
		held := time.Now()
		for {
			dl, err := h.get("lock-00500")
			if err == nil && dl.Status.Holder != nil && dl.Status.Holder.Identity == "fresh-pod:1" {
				break
			}
			if time.Since(held) > time.Minute {
				b.Fatalf("the new holder of %s did not show in a minute", types.NamespacedName{Namespace: h.ns, Name: "lock-00500"})
			}
			time.Sleep(50 * time.Millisecond)
		}
		fresh := time.Since(held)
		if worst < locks {
			b.Errorf("only %d of %d locks on the store stayed Ready", worst, locks)
		}
		b.ReportMetric(rss, "MiB-rss")
		b.ReportMetric(live, "MiB-live-heap")
		b.ReportMetric(float64(goroutines), "goroutines")
		b.ReportMetric(sentRate/mib, "MiB/s-from-redis")
		b.ReportMetric(fresh.Seconds(), "s-holder-shown")
		b.Logf("%d locks on a LockStore, 4 of them holding 64 MiB values, beside a hostile server and a 3,000-replica scanner: %d of %d stayed Ready; %.0f MiB resident (%.0f MiB live heap), %d goroutines; the store's server sent %.2f MiB/s; a new holder showed in status after %v",
			locks, worst, locks, rss, live, goroutines, sentRate/mib, fresh.Round(10*time.Millisecond))
	}
}

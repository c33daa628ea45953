/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestHugeTenantValuesAreReadBounded: a tenant of a ClusterLockStore with
// isolation ACL, with only its own user, stores 16 MiB under its lock's
// key, 16 MiB in its fence counter and 24 permits of 1 MiB under its
// semaphore's key. The controller keeps both locks Ready, shows the lock's
// holder as unrecognized and the semaphore's 24 permits, and sends the
// server's bytes of at most a few reads' prefixes: over 4 probe intervals
// the server sends the controller under 1 MiB. Before the bounded read
// script it sent every value whole on every probe (more than 16 MiB a
// second).
func TestHugeTenantValuesAreReadBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	srv := redistest.StartStandalone(t)
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	cs := h.createClusterStore("shared", aclStandaloneStore(srv.Addr()))
	h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	sem := onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "sem")
	sem.Permits = 30
	h.createIn(ns, "sem", sem)
	secret := "redlease-" + cs.Name
	dl := h.waitForIn(ns, "job", "Ready", readyOn(ns+"/job", v1alpha1.RedisModeStandalone, secret))
	h.waitForIn(ns, "sem", "Ready", readyOn(ns+"/sem", v1alpha1.RedisModeStandalone, secret))

	ctx := h.ctx()
	tenant := h.podClient(dl) // the tenant's own ACL user
	const mib = 1 << 20
	if err := tenant.Set(ctx, ns+"/job", strings.Repeat("v", 16*mib), 0).Err(); err != nil {
		t.Fatalf("SET as the tenant: %v", err)
	}
	expiry := float64(time.Now().Add(time.Hour).UnixMilli())
	for i := range 24 {
		member := strconv.Itoa(i) + strings.Repeat("p", mib)
		if err := tenant.ZAdd(ctx, ns+"/sem", redis.Z{Score: expiry, Member: member}).Err(); err != nil {
			t.Fatalf("ZADD as the tenant: %v", err)
		}
	}
	h.waitForIn(ns, "job", "the holder shown as unrecognized", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Holder == nil || dl.Status.Holder.Identity != unrecognizedHolder {
			return fmt.Errorf("holder %+v, want %s", dl.Status.Holder, unrecognizedHolder)
		}
		return isReady(dl)
	})
	h.waitForIn(ns, "sem", "24 permits held", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Held != 24 {
			return fmt.Errorf("held %d, want 24", dl.Status.Held)
		}
		return isReady(dl)
	})
	if err := tenant.Set(ctx, "{"+ns+"/job}:fence", "1"+strings.Repeat("0", 16*mib), 0).Err(); err != nil {
		t.Fatalf("SET of the fence counter as the tenant: %v", err)
	}

	sent := func() int64 {
		info, err := srv.Info(ctx, "stats")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
		return n
	}
	before := sent()
	time.Sleep(4 * time.Second) // four probe intervals
	if d := sent() - before; d > mib {
		t.Errorf("the server sent %d bytes in 4 probe intervals, want under 1 MiB: the controller reads tenants' values whole", d)
	}
	h.waitForIn(ns, "sem", "still Ready", isReady)
}

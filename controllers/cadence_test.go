/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestBusyLockStatusWritesAreBounded: a lock whose holders alternate ten
// times a second, reconciled many times a second (its password Secret
// touched every 100ms), gets at most about one status write per probe
// interval: a holder or fence change alone waits for the cadence. Before,
// every reconcile that saw another holder wrote, and woke every pod
// watching the lock. A condition change is still written at once.
func TestBusyLockStatusWritesAreBounded(t *testing.T) {
	t.Parallel()
	const window = 5 * time.Second // five probe intervals
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t, redistest.WithPassword("busy"))
	secret := h.createSecret("busy-auth", map[string]string{"password": "busy"})
	spec := standaloneSpec(srv.Addr())
	spec.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: secret.Name, Key: "password"}
	h.create("busy", spec)
	dl := h.waitFor("busy", "Ready", isReady)

	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	writes := countStatusWrites(ctx, t, h) // the namespace holds only this lock
	lockers := []*lock.Locker{
		newLocker(t, srv.Client(t), lock.WithIdentity("busy-a")),
		newLocker(t, srv.Client(t), lock.WithIdentity("busy-b")),
	}
	go busyHolders(ctx, lockers, dl.Status.Key)
	go touchEvery(ctx, h, secret, 100*time.Millisecond)
	reconcilesBefore := h.counter("busy").Load()
	<-ctx.Done()
	reconciles := h.counter("busy").Load() - reconcilesBefore
	t.Logf("%v: %d reconciles, %d status writes", window, reconciles, writes.Load())
	if reconciles < 20 {
		t.Fatalf("only %d reconciles in %v: the test did not make the lock busy", reconciles, window)
	}
	if n := writes.Load(); n > 8 {
		t.Errorf("%d status writes in %v (probe interval 1s): holder changes are written on every reconcile", n, window)
	}
	h.waitFor("busy", "the holder published within the cadence", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Holder == nil && dl.Status.FenceHighWater == 0 {
			return fmt.Errorf("no holder or fence published: %+v", dl.Status)
		}
		return nil
	})
}

// busyHolders alternates the lockers on key, ten acquisitions a second.
func busyHolders(ctx context.Context, lockers []*lock.Locker, key string) {
	for i := 0; ctx.Err() == nil; i++ {
		lease, err := lockers[i%2].TryAcquire(ctx, key)
		if err == nil {
			time.Sleep(50 * time.Millisecond)
			_ = lease.Release(context.Background())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// touchEvery changes an annotation of s every period: each change
// reconciles the locks that reference it.
func touchEvery(ctx context.Context, h *harness, s *corev1.Secret, period time.Duration) {
	for i := 0; ctx.Err() == nil; i++ {
		var cur corev1.Secret
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(s), &cur); err == nil {
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations["test/touch"] = fmt.Sprint(i)
			_ = h.c.Update(ctx, &cur)
		}
		time.Sleep(period)
	}
}

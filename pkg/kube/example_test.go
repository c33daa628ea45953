/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// settle stands for the work done under the lock: it stops when ctx ends
// and sends fence with every write, so the store refuses a late one.
func settle(ctx context.Context, fence uint64) error {
	_, _ = ctx, fence
	return nil
}

// lead stands for a leader's work: it runs until ctx ends, sending fence
// with every write.
func lead(ctx context.Context, fence uint64) {
	for ctx.Err() == nil {
		if err := settle(ctx, fence); err != nil {
			log.Print(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// quickStart is the Go code of README.md's quick start, as README shows it
// (test/docs's TestGoSnippets compares them), so that it compiles; make
// test-node runs README's copy in a pod (TestScenario9cQuickStart).
func quickStart(ctx context.Context) error {
	restConfig, err := rest.InClusterConfig() // the pod's ServiceAccount
	if err != nil {
		return err
	}
	l, err := kube.NewLocker(ctx, restConfig, "demo", "hello")
	if err != nil {
		return err
	}
	defer l.Close() //nolint:errcheck // README's snippet stays short; Example shows the errors handled

	lease, err := l.Acquire(ctx) // ctx bounds the wait only, never the lease
	if err != nil {
		return err
	}
	defer lease.Release(context.Background()) //nolint:errcheck // as above

	// The work ends with the lease; the fence goes with every write.
	return settle(lease.Context(), lease.Fence())
}

// A pod takes the lock a DistributedLock declares: billing/nightly-settlement,
// on the store its spec names. The pod's ServiceAccount needs the Role
// `lockctl rbac` prints (read the lock and its credentials Secret).
func Example() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()

	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement",
		lock.WithIdentity(os.Getenv("POD_NAME"))) // shown in status.holder
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.Print(err)
		}
	}()

	// Wait at most ten minutes for the lock (and for the resource to be
	// Ready); the lease itself lasts as long as it is renewed.
	wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	lease, err := l.Acquire(wait)
	switch {
	case errors.Is(err, kube.ErrNotReady):
		log.Fatalf("the DistributedLock is not Ready: %v", err) // kubectl get dlock -n billing says why
	case err != nil:
		log.Fatal(err)
	}
	defer func() {
		// ErrLeaseLost here means the lease ended before the work did.
		if err := lease.Release(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	if err := settle(lease.Context(), lease.Fence()); err != nil {
		log.Print(err)
	}
}

// Leader election on a DistributedLock: every replica runs this loop, one
// leads at a time, and the leader's work stops the moment its lease ends.
// Its fence goes with every write, so a store refuses a deposed leader.
func Example_leaderElection() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()

	l, err := kube.NewLocker(ctx, restConfig, "billing", "settlement-leader",
		lock.WithIdentity(os.Getenv("POD_NAME")))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.Print(err)
		}
	}()

	for ctx.Err() == nil {
		lease, err := l.Acquire(ctx) // waits in the line until this replica leads
		if err != nil {
			if ctx.Err() == nil {
				log.Print(err)
				time.Sleep(time.Second)
			}
			continue
		}
		work, cancel := context.WithCancel(lease.Context()) // ends with the lease
		stopOnSignal := context.AfterFunc(ctx, cancel)      // and on SIGTERM
		lead(work, lease.Fence())
		stopOnSignal()
		cancel()
		// Lost, or SIGTERM: release, so that another replica leads at once.
		if err := lease.Release(context.Background()); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			log.Print(err)
		}
	}
}

// podLock is docs/library.md's pkg/kube snippet (TestGoSnippets compares
// them): quickStart with the pod's name as the lease's identity.
func podLock(ctx context.Context, restConfig *rest.Config) error {
	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement", lock.WithIdentity(os.Getenv("POD_NAME")))
	if err != nil {
		return err
	}
	defer l.Close() //nolint:errcheck // the page's snippet stays short; Example shows the errors handled

	lease, err := l.Acquire(ctx) // waits for the lock, and for the resource to be Ready
	if err != nil {
		return err
	}
	defer lease.Release(context.Background()) //nolint:errcheck // as above
	return settle(lease.Context(), lease.Fence())
}

// A CronJob's run that must not overlap the previous one: it tries once and,
// when the previous run still holds the lock, exits without doing the work
// (lockctl run --lock billing/nightly-settlement does the same for any
// command).
func ExampleLocker_TryAcquire() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement",
		lock.WithIdentity(os.Getenv("POD_NAME")))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.Print(err)
		}
	}()

	lease, err := l.TryAcquire(ctx)
	var held *lock.NotAcquiredError
	switch {
	case errors.As(err, &held):
		log.Printf("the previous run still holds the lock (for %v more): skipping this one", held.HolderTTL)
		return
	case errors.Is(err, kube.ErrNotReady):
		log.Fatalf("the DistributedLock is not Ready: %v", err) // TryAcquire does not wait for it
	case err != nil:
		log.Fatal(err)
	}
	defer func() {
		if err := lease.Release(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	if err := settle(lease.Context(), lease.Fence()); err != nil {
		log.Print(err)
	}
}

// Who holds the lock, as lockctl status shows it: the holder's identity,
// how long its lease has left and its fence, never its lock value.
func ExampleLocker_Inspect() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := kube.NewLocker(ctx, restConfig, "billing", "nightly-settlement")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.Print(err)
		}
	}()

	h, err := l.Inspect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if !h.Held {
		log.Printf("%s is free", h.Key)
		return
	}
	log.Printf("%s is held by %s for %v more, fence %d", h.Key, h.Identity, h.TTL, h.Fence)
}

// A DistributedLock with spec.permits: 3 is a semaphore: each Acquire takes
// a permit of its own, so at most three pods export at once, each with its
// own fence.
func Example_semaphore() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := kube.NewLocker(ctx, restConfig, "billing", "exports",
		lock.WithIdentity(os.Getenv("POD_NAME")))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			log.Print(err)
		}
	}()

	permit, err := l.Acquire(ctx) // waits in the semaphore's line for a free permit
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := permit.Release(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	if err := settle(permit.Context(), permit.Fence()); err != nil {
		log.Print(err)
	}
}

// Compiled, not run: they need a cluster.
var _, _ = quickStart, podLock

package demo

import (
	"context"
	"errors"
	"os/signal"
	"syscall"

	"github.com/redlease/redlease/pkg/lock"
)

// runLeader is a candidate in a pod, as a Go program elects its leader with
// pkg/kube: the pod's in-cluster config and service account, the lock
// namespace/lockName. It leads while its lease lives, contends again when
// the lease is lost, and on SIGTERM (the pod deleted) releases the lease,
// so that another candidate leads within a few round trips instead of
// after the TTL. It prints "leading" and "lost" events with the fence.
func runLeader(namespace, lockName string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fail := func(err error) int {
		say(event{Worker: lock.DefaultIdentity(), Kind: "error", Detail: err.Error()})
		return 1
	}
	l, err := podLocker(ctx, "", namespace, lockName)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = l.Close() }()
	for {
		lease, err := l.Acquire(ctx)
		if ctx.Err() != nil {
			return 0
		}
		if err != nil {
			return fail(err)
		}
		say(event{Worker: lease.Identity(), Kind: "leading", Fence: lease.Fence()})
		select {
		case <-lease.Done():
			say(event{Worker: lease.Identity(), Kind: "lost", Fence: lease.Fence(), Detail: lease.Err().Error()})
		case <-ctx.Done():
			// Not ctx: it is done, and the release must still be sent.
			err := lease.Release(context.WithoutCancel(ctx))
			if err != nil && !errors.Is(err, lock.ErrLeaseLost) {
				return fail(err)
			}
			say(event{Worker: lease.Identity(), Kind: "released", Fence: lease.Fence()})
			return 0
		}
	}
}

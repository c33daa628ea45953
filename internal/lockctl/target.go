/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// targetFlags say which lock a command works on: a DistributedLock
// (--lock NAMESPACE/NAME) or plain Redis (--redis URL[,URL...] --key K).
type targetFlags struct {
	lock       string
	kubeconfig string
	redis      string
	key        string
	ttl        time.Duration
	fifo       bool
	permits    int
	identity   string
}

func (f *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.lock, "lock", "", "the DistributedLock, as NAMESPACE/NAME")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.redis, "redis", "", "without Kubernetes: redis:// or rediss:// URL(s), redis://[[user]:password@]host:port[/db]; several, comma-separated, mean Redlock over independent nodes")
	fs.StringVar(&f.key, "key", "", "with --redis: the lock key")
	fs.DurationVar(&f.ttl, "ttl", lock.DefaultTTL, "with --redis: the lease TTL (a DistributedLock brings its own)")
	fs.BoolVar(&f.fifo, "fifo", false, "with --redis: strict FIFO, a free lock always goes to the first in line (a DistributedLock brings its own spec.fairness)")
	fs.IntVar(&f.permits, "permits", 1, "with --redis: how many may hold the lock at once; above 1 it is a semaphore (not with Redlock; a DistributedLock brings its own spec.permits)")
	fs.StringVar(&f.identity, "identity", "", "holder identity (default: $POD_NAME or hostname, and pid)")
}

// handle is the one shape of a lock bound to its key: *lock.Mutex,
// *lock.Semaphore and *kube.Locker all have it, so the commands need no
// adapter.
type handle interface {
	Key() string
	Acquire(ctx context.Context) (*lock.Lease, error)
	TryAcquire(ctx context.Context) (*lock.Lease, error)
}

// locker is an opened lock: its handle, what status says about it, and
// what closing it frees.
type locker struct {
	handle
	// inspect reads who holds the lock from Redis.
	inspect func(ctx context.Context) (inspection, error)
	// describe returns where the lock lives and its readiness, for status.
	describe func() description
	Close    func() error
}

// inspection is what Redis says about a lock (permits 1) or a semaphore.
type inspection struct {
	permits int
	lock    lock.Holding       // permits 1
	sem     lock.PermitHolding // permits above 1
}

// inspectLock and inspectSemaphore make a locker's inspect.
func inspectLock(read func(context.Context) (lock.Holding, error)) func(context.Context) (inspection, error) {
	return func(ctx context.Context) (inspection, error) {
		h, err := read(ctx)
		return inspection{permits: 1, lock: h}, err
	}
}

func inspectSemaphore(permits int, read func(context.Context) (lock.PermitHolding, error)) func(context.Context) (inspection, error) {
	return func(ctx context.Context) (inspection, error) {
		h, err := read(ctx)
		return inspection{permits: permits, sem: h}, err
	}
}

// description is where a lock lives, as `lockctl status` shows it.
type description struct {
	mode       string
	addresses  []string // the servers, or the sentinels in Sentinel mode
	masterName string   // Sentinel mode
	store      string   // Kind/name, "inline", or empty without a DistributedLock
	ready      string
	// holder is status.holder of the DistributedLock (the controller's
	// observation, with the holder's pod and node); nil without one.
	holder *v1alpha1.LockHolder
}

func (f *targetFlags) open(ctx context.Context) (*locker, error) {
	var opts []lock.Option
	if f.identity != "" {
		opts = append(opts, lock.WithIdentity(f.identity))
	}
	switch {
	case f.lock != "" && f.redis != "":
		return nil, exit(ExitUsage, errors.New("use --lock or --redis, not both"))
	case f.lock != "":
		ns, name, ok := strings.Cut(f.lock, "/")
		if !ok || ns == "" || name == "" {
			return nil, exit(ExitUsage, fmt.Errorf("--lock %q: want NAMESPACE/NAME", f.lock))
		}
		return openKube(ctx, f.kubeconfig, ns, name, opts)
	case f.redis != "":
		if f.key == "" {
			return nil, exit(ExitUsage, errors.New("--redis needs --key"))
		}
		opts = append(opts, lock.WithTTL(f.ttl))
		if f.fifo {
			opts = append(opts, lock.WithFIFO())
		}
		return openRedis(f.redis, f.key, f.permits, opts)
	}
	return nil, exit(ExitUsage, errors.New("say which lock: --lock NAMESPACE/NAME, or --redis URL --key K"))
}

// exitCodeFor maps library errors to exit codes.
func exitCodeFor(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, kube.ErrNotReady):
		return ExitNotReady
	case errors.Is(err, lock.ErrNotAcquired):
		return ExitNotAcquired
	case errors.Is(err, lock.ErrInvalidConfig):
		return ExitUsage
	}
	return ExitError
}

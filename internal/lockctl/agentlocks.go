/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/redlease/redlease/internal/agent"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// agentLocks are the locks `lockctl agent` serves, each opened once on its
// first request and kept until the agent stops: DistributedLocks through
// pkg/kube (the pod's own ServiceAccount decides which it may read), or
// keys of the --redis deployment.
type agentLocks struct {
	open func(ctx context.Context, name string, permits int) (*agentLock, error)
	// closeAll frees what open shares (the --redis clients); may be nil.
	closeAll func() error

	mu     sync.Mutex
	opened map[string]*agentLock // by name and permits
}

// agentLock is one opened lock as the agent package wants it.
type agentLock struct {
	*locker
	ttl func() time.Duration
}

var _ agent.Lock = (*agentLock)(nil)

func (l *agentLock) TTL() time.Duration { return l.ttl() }

// Inspect reads the lock or semaphore as agent.Holding.
func (l *agentLock) Inspect(ctx context.Context) (agent.Holding, error) {
	in, err := l.inspect(ctx)
	if err != nil {
		return agent.Holding{Key: l.Key()}, err
	}
	if in.permits > 1 {
		return agent.Holding{Key: l.Key(), Holders: in.sem.Holders, Fence: in.sem.Fence, Waiting: in.sem.Waiting}, nil
	}
	h := agent.Holding{Key: l.Key(), Fence: in.lock.Fence, Waiting: in.lock.Waiting}
	if in.lock.Held {
		h.Holders = []lock.PermitHolder{{Identity: in.lock.Identity, TTL: in.lock.TTL}}
	}
	return h, nil
}

// Open returns the lock name names with permits, opening it the first
// time. Failures are not kept: a DistributedLock created later opens.
func (a *agentLocks) Open(ctx context.Context, name string, permits int) (agent.Lock, error) {
	id := fmt.Sprintf("%s\x00%d", name, permits)
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.opened[id]; ok {
		return l, nil
	}
	l, err := a.open(ctx, name, permits)
	if err != nil {
		return nil, err
	}
	a.opened[id] = l
	return l, nil
}

// close closes every opened lock, then what they share.
func (a *agentLocks) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, l := range a.opened {
		errs = append(errs, l.Close())
	}
	if a.closeAll != nil {
		errs = append(errs, a.closeAll())
	}
	return errors.Join(errs...)
}

// agentLocksOf opens locks as target says: the Kubernetes API by default,
// --redis's deployment when given.
func agentLocksOf(target *targetFlags, opts []lock.Option) (*agentLocks, error) {
	a := &agentLocks{opened: map[string]*agentLock{}}
	if target.redis != "" {
		password, err := target.password()
		if err != nil {
			return nil, err
		}
		d, err := dialRedis(target.redis, password, opts)
		if err != nil {
			return nil, err
		}
		ttl := target.take.ttl
		a.closeAll = d.close
		a.open = func(_ context.Context, key string, permits int) (*agentLock, error) {
			if err := lock.ValidateKey(key); err != nil {
				return nil, fmt.Errorf("%w: %w", agent.ErrBadName, err)
			}
			l, err := d.bind(key, permits)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", agent.ErrBadName, err)
			}
			return &agentLock{locker: l, ttl: func() time.Duration { return ttl }}, nil
		}
		return a, nil
	}
	if target.take.maxHold != 0 {
		return nil, exit(ExitUsage, errors.New("--max-hold is for --redis: a DistributedLock brings its own spec.maxHold"))
	}
	cfg, err := target.kube.restConfig()
	if err != nil {
		return nil, err
	}
	defaultNS, err := target.kube.defaultNamespace()
	if err != nil {
		return nil, err
	}
	a.open = func(ctx context.Context, name string, permits int) (*agentLock, error) {
		if permits != 1 {
			return nil, fmt.Errorf("%w: permits %d: a DistributedLock brings its own spec.permits", agent.ErrBadName, permits)
		}
		ns, name, err := splitLockName(name, defaultNS)
		if err != nil {
			return nil, err
		}
		l, err := openKube(ctx, cfg, ns, name, opts)
		if err != nil {
			return nil, err
		}
		k := l.handle.(*kube.Locker)
		return &agentLock{locker: l, ttl: func() time.Duration { return k.Resource().Spec.TTLOrDefault() }}, nil
	}
	return a, nil
}

// splitLockName reads a request's DistributedLock: NAME in defaultNS, or
// NAMESPACE/NAME in any namespace (the pod's Role decides which it may
// read).
func splitLockName(s, defaultNS string) (namespace, name string, err error) {
	namespace, name, qualified, ok := splitNamespaced(s)
	if !qualified {
		namespace = defaultNS
	}
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", fmt.Errorf("%w: %q: want NAME or NAMESPACE/NAME of a DistributedLock", agent.ErrBadName, s)
	}
	return namespace, name, nil
}

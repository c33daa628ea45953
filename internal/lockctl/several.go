/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// hold is what a session took: one lock's lease, or several locks' all or
// none (run --lock a --lock b).
type hold interface {
	Done() <-chan struct{}
	Err() error
	Release(ctx context.Context) error
	// env is what COMMAND is told of the hold (LOCK_KEY, LOCK_FENCE, ...).
	env() []string
	// String says what is held, for /readyz.
	String() string
}

// leaseHold is one lock's lease.
type leaseHold struct{ *lock.Lease }

func (h leaseHold) env() []string {
	return []string{
		"LOCK_KEY=" + h.Key(),
		"LOCK_FENCE=" + strconv.FormatUint(h.Fence(), 10),
		"LOCK_HOLDER=" + h.Identity(),
		"LOCK_SHARED=" + strconv.FormatBool(h.Shared()),
	}
}

func (h leaseHold) String() string { return fmt.Sprintf("holding %s, fence %d", h.Key(), h.Fence()) }

// multiHold is several locks taken all or none. COMMAND gets their keys
// and fences space-separated, in --lock (or --key) order: no key of a
// DistributedLock holds whitespace, and --key refuses one that does.
type multiHold struct{ *lock.MultiLease }

func (h multiHold) keysAndFences() (keys, fences string) {
	var k, f []string
	for _, l := range h.Leases() {
		k = append(k, l.Key())
		f = append(f, strconv.FormatUint(l.Fence(), 10))
	}
	return strings.Join(k, " "), strings.Join(f, " ")
}

func (h multiHold) env() []string {
	keys, fences := h.keysAndFences()
	return []string{
		"LOCK_KEY=" + keys,
		"LOCK_FENCE=" + fences,
		"LOCK_HOLDER=" + h.Leases()[0].Identity(),
		"LOCK_SHARED=false",
	}
}

func (h multiHold) String() string {
	keys, fences := h.keysAndFences()
	return fmt.Sprintf("holding %s, fences %s", keys, fences)
}

// takeAll takes several locks all or none: waiting with wait, else in one
// attempt.
type takeAll func(ctx context.Context, wait bool) (*lock.MultiLease, error)

// several reports whether the flags name more than one lock (run only).
func (f *targetFlags) several() bool { return len(f.locks) > 1 || len(f.keys) > 1 }

// openSeveral opens the locks of several --lock or --key flags as one
// locker whose hold takes them all or none: DistributedLocks of one store
// through pkg/kube, or keys of one --redis deployment (not Redlock).
func (f *targetFlags) openSeveral(ctx context.Context) (*locker, error) {
	switch {
	case f.shared:
		return nil, exit(ExitUsage, errors.New("--shared takes one lock: several locks are taken exclusively, all or none"))
	case f.permits > 1:
		return nil, exit(ExitUsage, errors.New("--permits above 1 takes one semaphore: several locks are locks, all or none"))
	case len(f.locks) > 1 && f.redis != "":
		return nil, exit(ExitUsage, errors.New("use --lock or --redis, not both"))
	case len(f.locks) > 1 && f.take.maxHold != 0:
		return nil, exit(ExitUsage, errors.New("--max-hold is for --redis: a DistributedLock brings its own spec.maxHold"))
	case len(f.locks) > 1:
		return f.openKubeSeveral(ctx)
	case f.redis == "":
		return nil, exit(ExitUsage, errors.New("several --key need --redis"))
	}
	for _, k := range f.keys {
		if strings.ContainsFunc(k, unicode.IsSpace) {
			return nil, exit(ExitUsage, fmt.Errorf("--key %q: with several keys, none may hold whitespace (COMMAND gets them space-separated in LOCK_KEY)", k))
		}
	}
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	d, err := dialRedis(f.redis, password, opts)
	if err != nil {
		return nil, err
	}
	keys := f.keys
	take := func(ctx context.Context, wait bool) (*lock.MultiLease, error) {
		if wait {
			return d.l.AcquireAll(ctx, keys...)
		}
		return d.l.TryAcquireAll(ctx, keys...)
	}
	var inspects []func(context.Context) (inspection, error)
	for _, k := range keys {
		inspects = append(inspects, inspectLock(d.l.Mutex(k).Inspect))
	}
	return &locker{several: take, keys: strings.Join(keys, " "), inspect: inspectAny(inspects),
		describe: func() description { return d.d }, Close: d.close}, nil
}

// openKubeSeveral opens every --lock through pkg/kube; kube.AcquireAll
// refuses locks of different stores, namespaces or settings.
func (f *targetFlags) openKubeSeveral(ctx context.Context) (*locker, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, err
	}
	var (
		opened   []*locker
		lockers  []*kube.Locker
		keys     []string
		inspects []func(context.Context) (inspection, error)
	)
	closeAll := func() error {
		var errs []error
		for _, l := range opened {
			errs = append(errs, l.Close())
		}
		return errors.Join(errs...)
	}
	for _, name := range f.locks {
		ns, n, err := f.nameOf(name)
		if err != nil {
			_ = closeAll()
			return nil, err
		}
		l, err := openKube(ctx, cfg, ns, n, opts)
		if err != nil {
			_ = closeAll()
			return nil, err
		}
		opened = append(opened, l)
		lockers = append(lockers, l.handle.(*kube.Locker))
		keys = append(keys, l.Key())
		inspects = append(inspects, l.inspect)
	}
	take := func(ctx context.Context, wait bool) (*lock.MultiLease, error) {
		if wait {
			return kube.AcquireAll(ctx, lockers...)
		}
		return kube.TryAcquireAll(ctx, lockers...)
	}
	first := opened[0]
	return &locker{several: take, keys: strings.Join(keys, " "), inspect: inspectAny(inspects), describe: first.describe, Close: closeAll}, nil
}

// inspectAny reads several locks as one: full when any of them is (a
// lock taken with others all or none waits for each), with the first
// full one's holder, else the first's.
func inspectAny(inspects []func(context.Context) (inspection, error)) func(context.Context) (inspection, error) {
	return func(ctx context.Context) (inspection, error) {
		var first inspection
		for i, read := range inspects {
			in, err := read(ctx)
			if err != nil || in.full() {
				return in, err
			}
			if i == 0 {
				first = in
			}
		}
		return first, nil
	}
}

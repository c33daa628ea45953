/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// targetFlags say which lock a command works on: a DistributedLock
// (--lock [NAMESPACE/]NAME, kubectl's flags) or plain Redis
// (--redis URL[,URL...] --key K, the password from a file or
// $REDISCLI_AUTH when the URL has none).
type targetFlags struct {
	lock string
	// locks and keys are run's --lock and --key, which may be given
	// several times (all or none); one of them is lock or key.
	locks, keys  []string
	kube         kubeFlags
	redis        string
	passwordFile string
	key          string
	permits      int
	// shared takes the lock shared (run --shared).
	shared bool
	take   takeFlags
}

// takeFlags shape a lease: only the commands that take the lock have them.
type takeFlags struct {
	ttl         time.Duration
	maxHold     time.Duration // 0: no cap
	fifo        bool
	tickets     bool
	identity    string
	metricsAddr string
	// metrics is where the lock's metrics go (set by takeLock when
	// --metrics-addr serves them); nil: nowhere.
	metrics prometheus.Registerer
}

// redisPasswordEnv holds the password of --redis URLs without one, as
// for redis-cli.
const redisPasswordEnv = "REDISCLI_AUTH" //nolint:gosec // G101: the name of an environment variable, not a credential

func (f *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.lock, "lock", "", "the DistributedLock, as NAME (in -n's namespace) or NAMESPACE/NAME")
	f.registerSource(fs)
	fs.StringVar(&f.key, "key", "", "with --redis: the lock key")
	fs.IntVar(&f.permits, "permits", 1, "with --redis: how many may hold the lock at once; above 1 it is a semaphore (not with Redlock; a DistributedLock brings its own spec.permits)")
}

// registerSource adds where locks come from: kubectl's flags, or --redis.
func (f *targetFlags) registerSource(fs *pflag.FlagSet) {
	f.kube.register(fs)
	fs.StringVar(&f.redis, "redis", "", "without Kubernetes: redis:// or rediss:// URL(s), redis://[[user]:password@]host:port[/db] (better without the password: see --redis-password-file); several, comma-separated, mean Redlock over independent nodes")
	fs.StringVar(&f.passwordFile, "redis-password-file", "", "with --redis: a file holding the password of the URLs that carry none (default: $"+redisPasswordEnv+"; a password inside the URL shows in ps)")
}

// registerTake adds the flags of the commands that take the lock.
func (f *targetFlags) registerTake(fs *pflag.FlagSet) {
	f.register(fs)
	f.registerLease(fs)
}

// registerRun adds run's flags: registerTake's, where --lock and --key may
// be given several times, to take several locks all or none.
func (f *targetFlags) registerRun(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.locks, "lock", nil, "the DistributedLock, as NAME (in -n's namespace) or NAMESPACE/NAME; several --lock take several locks of one store all or none (exclusively)")
	f.registerSource(fs)
	fs.StringArrayVar(&f.keys, "key", nil, "with --redis: the lock key; several --key take several keys all or none (exclusively; not on Redlock)")
	fs.IntVar(&f.permits, "permits", 1, "with --redis: how many may hold the lock at once; above 1 it is a semaphore (not with Redlock; a DistributedLock brings its own spec.permits)")
	f.registerLease(fs)
}

// registerLease adds the flags that shape leases.
func (f *targetFlags) registerLease(fs *pflag.FlagSet) {
	fs.DurationVar(&f.take.ttl, "ttl", lock.DefaultTTL, "with --redis: the lease TTL (a DistributedLock brings its own)")
	fs.DurationVar(&f.take.maxHold, "max-hold", 0, "with --redis: the longest the lease may be held, renewals included, longer than --ttl; past it the lease is lost (run stops COMMAND and exits 4) however alive lockctl is (default: no cap; a DistributedLock brings its own spec.maxHold)")
	fs.BoolVar(&f.take.tickets, "ticket-order", false, "with --redis: order the waiting line by ticket from the key's counter, not the server's clock (only once every client of the key speaks protocol 7; a DistributedLock brings its own spec.lineOrder)")
	fs.BoolVar(&f.take.fifo, "fifo", false, "with --redis: strict FIFO, a free lock always goes to the first in line (a DistributedLock brings its own spec.fairness)")
	fs.StringVar(&f.take.identity, "identity", "", "holder identity (default: $POD_NAME or hostname, and pid)")
	fs.StringVar(&f.take.metricsAddr, "metrics-addr", "", "serve the lock's metrics (redlease_lock_*) and the process's at GET /metrics on this address, e.g. :9090, for Prometheus")
}

// handle is the one shape of a lock bound to its key: *lock.Mutex,
// *lock.Semaphore and *kube.Locker all have it, so the commands need no
// adapter.
type handle interface {
	Key() string
	Acquire(ctx context.Context) (*lock.Lease, error)
	TryAcquire(ctx context.Context) (*lock.Lease, error)
}

// sharer is a handle that can also take its lock shared: *lock.Mutex and
// *kube.Locker.
type sharer interface {
	Key() string
	AcquireShared(ctx context.Context) (*lock.Lease, error)
	TryAcquireShared(ctx context.Context) (*lock.Lease, error)
}

// sharedHandle is a sharer as the handle of run --shared: its Acquire and
// TryAcquire take the lock shared.
type sharedHandle struct{ s sharer }

func (h sharedHandle) Key() string { return h.s.Key() }

func (h sharedHandle) Acquire(ctx context.Context) (*lock.Lease, error) {
	return h.s.AcquireShared(ctx)
}

func (h sharedHandle) TryAcquire(ctx context.Context) (*lock.Lease, error) {
	return h.s.TryAcquireShared(ctx)
}

// locker is an opened lock: its handle, what status says about it, and
// what closing it frees. Several locks taken all or none (run) have no
// handle: several takes them, and keys names them.
type locker struct {
	handle
	several takeAll
	keys    string
	// inspect reads who holds the lock from Redis.
	inspect func(ctx context.Context) (inspection, error)
	// describe returns where the lock lives and its readiness, for status.
	describe func() description
	Close    func() error
}

// Key is the lock's key, or the keys of several, space-separated.
func (l *locker) Key() string {
	if l.several != nil {
		return l.keys
	}
	return l.handle.Key()
}

// take acquires the hold: waiting with wait, else in one attempt.
func (l *locker) take(ctx context.Context, wait bool) (hold, error) {
	if l.several != nil {
		m, err := l.several(ctx, wait)
		if err != nil {
			return nil, err
		}
		return multiHold{m}, nil
	}
	acquire := l.TryAcquire
	if wait {
		acquire = l.Acquire
	}
	lease, err := acquire(ctx)
	if err != nil {
		return nil, err
	}
	return leaseHold{lease}, nil
}

// inspection is what Redis says about a lock (permits 1) or a semaphore.
type inspection struct {
	permits int
	lock    lock.Holding       // permits 1
	sem     lock.PermitHolding // permits above 1
}

// full reports whether the lock could not be taken now: held, or every
// permit of a semaphore held.
func (in inspection) full() bool {
	if in.permits > 1 {
		return in.sem.Held() >= in.permits
	}
	return in.lock.Held
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

// options are the lock options every lock gets: the identity, the
// metrics; with --redis, the lease flags too (a DistributedLock brings its
// own).
func (f *targetFlags) options() ([]lock.Option, error) {
	var opts []lock.Option
	if f.take.identity != "" {
		opts = append(opts, lock.WithIdentity(f.take.identity))
	}
	if f.take.metrics != nil {
		opts = append(opts, lock.WithMetrics(f.take.metrics))
	}
	if f.redis == "" {
		return opts, nil
	}
	settings, err := f.take.redisOptions()
	return append(opts, settings...), err
}

func (f *targetFlags) open(ctx context.Context) (*locker, error) {
	if f.several() {
		return f.openSeveral(ctx)
	}
	if len(f.locks) == 1 {
		f.lock = f.locks[0]
	}
	if len(f.keys) == 1 {
		f.key = f.keys[0]
	}
	l, err := f.openHandle(ctx)
	if err != nil || !f.shared {
		return l, err
	}
	s, ok := l.handle.(sharer)
	if !ok {
		_ = l.Close()
		return nil, exit(ExitUsage, errors.New("--shared takes a lock, not a semaphore: leave out --permits"))
	}
	l.handle = sharedHandle{s}
	return l, nil
}

func (f *targetFlags) openHandle(ctx context.Context) (*locker, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	switch {
	case f.lock != "" && f.redis != "":
		return nil, exit(ExitUsage, errors.New("use --lock or --redis, not both"))
	case f.lock != "" && f.take.maxHold != 0:
		// Refused rather than ignored: a cap the user asked for that
		// silently does not apply would keep a stuck holder.
		return nil, exit(ExitUsage, errors.New("--max-hold is for --redis: a DistributedLock brings its own spec.maxHold"))
	case f.lock != "":
		ns, name, err := f.lockName()
		if err != nil {
			return nil, err
		}
		cfg, err := f.kube.restConfig()
		if err != nil {
			return nil, err
		}
		return openKube(ctx, cfg, ns, name, opts)
	case f.redis != "":
		if f.key == "" {
			return nil, exit(ExitUsage, errors.New("--redis needs --key"))
		}
		password, err := f.password()
		if err != nil {
			return nil, err
		}
		return openRedis(f.redis, password, f.key, f.permits, opts)
	}
	return nil, exit(ExitUsage, errors.New("say which lock: --lock [NAMESPACE/]NAME, or --redis URL --key K"))
}

// redisOptions are the lease settings that a DistributedLock's spec
// brings, from the flags: for --redis.
func (t *takeFlags) redisOptions() ([]lock.Option, error) {
	var opts []lock.Option
	ttl := lock.DefaultTTL
	if t.ttl > 0 {
		ttl = t.ttl
		opts = append(opts, lock.WithTTL(t.ttl))
	}
	if t.fifo {
		opts = append(opts, lock.WithFIFO())
	}
	if t.tickets {
		opts = append(opts, lock.WithTicketOrder())
	}
	if t.maxHold != 0 {
		// As spec.maxHold's rule: the library would take a cap equal to
		// the TTL, under which no renewal ever happens.
		if t.maxHold <= ttl {
			return nil, exit(ExitUsage, fmt.Errorf("--max-hold %v must be longer than --ttl %v: the acquisition alone holds the lock for the TTL, so a cap no longer than that would never let a renewal happen", t.maxHold, ttl))
		}
		opts = append(opts, lock.WithMaxHold(t.maxHold))
	}
	return opts, nil
}

// lockName splits --lock: NAMESPACE/NAME, or NAME in -n's namespace (the
// context's by default); a NAMESPACE/ that contradicts -n is refused.
func (f *targetFlags) lockName() (namespace, name string, err error) {
	return f.nameOf(f.lock)
}

// nameOf splits one --lock's value as lockName says.
func (f *targetFlags) nameOf(lock string) (namespace, name string, err error) {
	ns, name, qualified, ok := splitNamespaced(lock)
	switch {
	case !ok:
		return "", "", exit(ExitUsage, fmt.Errorf("--lock %q: want NAME or NAMESPACE/NAME", lock))
	case qualified && f.kube.namespace() != "" && f.kube.namespace() != ns:
		return "", "", exit(ExitUsage, fmt.Errorf("--lock %q is in namespace %s, -n says %s", lock, ns, f.kube.namespace()))
	case qualified:
		return ns, name, nil
	}
	ns, err = f.kube.defaultNamespace()
	return ns, name, err
}

// password is the one for --redis URLs without their own:
// --redis-password-file's content (its trailing newline trimmed), else
// $REDISCLI_AUTH.
func (f *targetFlags) password() (string, error) {
	if f.passwordFile == "" {
		return os.Getenv(redisPasswordEnv), nil
	}
	return readPasswordFile("--redis-password-file", f.passwordFile)
}

// readPasswordFile reads the password in file, given by flag, without its
// trailing newline (a Secret made with echo has one).
func readPasswordFile(flag, file string) (string, error) {
	b, err := os.ReadFile(file) //nolint:gosec // G304: the file the user named
	if err != nil {
		return "", exit(ExitUsage, fmt.Errorf("%s: %w", flag, err))
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// exitCodeFor maps library errors to exit codes; a lock held or Redis
// unavailable come as exitErrors with the codes chosen for them
// (notAcquired, readFailed).
func exitCodeFor(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, kube.ErrNotReady):
		return ExitNotReady
	case errors.Is(err, lock.ErrInvalidConfig):
		return ExitUsage
	}
	return ExitError
}

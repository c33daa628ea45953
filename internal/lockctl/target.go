package lockctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

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
	identity   string
}

func (f *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.lock, "lock", "", "the DistributedLock, as NAMESPACE/NAME")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.redis, "redis", "", "without Kubernetes: redis:// URL(s); several, comma-separated, mean Redlock over independent nodes")
	fs.StringVar(&f.key, "key", "", "with --redis: the lock key")
	fs.DurationVar(&f.ttl, "ttl", lock.DefaultTTL, "with --redis: the lease TTL (a DistributedLock brings its own)")
	fs.StringVar(&f.identity, "identity", "", "holder identity (default: $POD_NAME or hostname, and pid)")
}

// handle is the one shape of a lock bound to its key: *lock.Mutex and
// *kube.Locker both have it, so the commands need no adapter.
type handle interface {
	Key() string
	Acquire(ctx context.Context) (*lock.Lease, error)
	TryAcquire(ctx context.Context) (*lock.Lease, error)
	Inspect(ctx context.Context) (lock.Holding, error)
}

// locker is an opened lock: its handle, what status says about it, and
// what closing it frees.
type locker struct {
	handle
	// describe returns the topology and readiness for status.
	describe func() (mode string, ready string)
	Close    func() error
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
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = f.kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
		l, err := kube.NewLocker(ctx, cfg, ns, name, opts...)
		if err != nil {
			return nil, err
		}
		return &locker{handle: l, describe: func() (string, string) { return describe(l.Resource()) }, Close: l.Close}, nil
	case f.redis != "":
		if f.key == "" {
			return nil, exit(ExitUsage, errors.New("--redis needs --key"))
		}
		return openRedis(f.redis, f.key, append([]lock.Option{lock.WithTTL(f.ttl)}, opts...))
	}
	return nil, exit(ExitUsage, errors.New("say which lock: --lock NAMESPACE/NAME, or --redis URL --key K"))
}

// describe reports a DistributedLock's mode and Ready condition.
func describe(dl *v1alpha1.DistributedLock) (mode, ready string) {
	ready = "Unknown"
	for _, c := range dl.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			ready = string(c.Status)
			if c.Status != "True" {
				ready += " (" + c.Reason + ": " + c.Message + ")"
			}
		}
	}
	return string(dl.Spec.Redis.Mode), ready
}

// openRedis opens key on plain Redis: one URL, or several for Redlock.
func openRedis(urls, key string, opts []lock.Option) (*locker, error) {
	var clients []redis.UniversalClient
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	for u := range strings.SplitSeq(urls, ",") {
		o, err := redis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			closeAll()
			return nil, exit(ExitUsage, fmt.Errorf("--redis %q: %w", u, err))
		}
		o.ContextTimeoutEnabled = true // a renewal stops waiting when the lease's validity ends
		clients = append(clients, redis.NewClient(o))
	}
	var (
		l    *lock.Locker
		err  error
		mode = "Standalone"
	)
	if len(clients) == 1 {
		l, err = lock.New(clients[0], opts...)
	} else {
		mode = fmt.Sprintf("Redlock (%d nodes)", len(clients))
		l, err = lock.NewRedlock(clients, opts...)
	}
	if err != nil {
		closeAll()
		return nil, exit(ExitUsage, err)
	}
	return &locker{
		handle:   l.Mutex(key),
		describe: func() (string, string) { return mode, "n/a (no DistributedLock)" },
		Close: func() error {
			err := l.Close()
			closeAll()
			if errors.Is(err, lock.ErrClosed) {
				return nil
			}
			return err
		},
	}, nil
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

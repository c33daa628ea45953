package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/pkg/lock"
)

// ErrClosed is returned by a Locker's methods after Close.
var ErrClosed = errors.New("kube: locker closed")

// Locker is a handle on one DistributedLock's key. It is safe for concurrent
// use; create one per resource and share it.
type Locker struct {
	namespace, name string
	reader          client.Reader
	opts            []lock.Option
	stopWatch       context.CancelFunc
	watchDone       chan struct{}

	mu      sync.Mutex
	obj     *v1alpha1.DistributedLock // latest seen
	current *binding                  // for new acquisitions; nil until needed
	retired []*binding                // closed once their last lease ends
	closed  bool
}

// binding is one lock.Locker with its clients, and the leases it handed out.
type binding struct {
	fingerprint string
	key         string
	locker      *lock.Locker
	clients     []redis.UniversalClient
	leases      int
}

// NewLocker reads the DistributedLock namespace/name (ctx bounds this first
// read only) and returns a handle that follows the resource until Close.
// opts are applied after the options the resource implies (TTL, renew
// interval, fencing, waitForReplicas), so they can add an identity, a logger
// or metrics — or override the resource, deliberately.
func NewLocker(ctx context.Context, cfg *rest.Config, namespace, name string, opts ...lock.Option) (*Locker, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kube: building a client: %w", err)
	}
	var dl v1alpha1.DistributedLock
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &dl); err != nil {
		return nil, fmt.Errorf("kube: reading DistributedLock %s/%s: %w", namespace, name, err)
	}
	watchCtx, cancel := context.WithCancel(context.Background())
	l := &Locker{namespace: namespace, name: name, reader: c, opts: opts, obj: &dl,
		stopWatch: cancel, watchDone: make(chan struct{})}
	go l.follow(watchCtx, c, dl.ResourceVersion)
	return l, nil
}

// Key returns the Redis key of the resource as last seen.
func (l *Locker) Key() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.obj.Spec.Key != "" {
		return l.obj.Spec.Key
	}
	return lock.DefaultKey(l.namespace, l.name)
}

// TryAcquire makes one attempt (see lock.Locker.TryAcquire).
func (l *Locker) TryAcquire(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, (*lock.Locker).TryAcquire)
}

// Acquire waits for the key, bounded by ctx (see lock.Locker.Acquire). A
// resource that is not Ready fails at once with ErrNotReady.
func (l *Locker) Acquire(ctx context.Context) (*lock.Lease, error) {
	return l.take(ctx, (*lock.Locker).Acquire)
}

func (l *Locker) take(ctx context.Context, op func(*lock.Locker, context.Context, string) (*lock.Lease, error)) (*lock.Lease, error) {
	b, err := l.bind(ctx)
	if err != nil {
		return nil, err
	}
	lease, err := op(b.locker, ctx, b.key)
	if err != nil {
		l.unref(b)
		return nil, err
	}
	go func() { // the binding stays open while the lease lives
		<-lease.Done()
		l.unref(b)
	}()
	return lease, nil
}

// bind returns the binding for the resource as last seen, building it when
// the topology or settings changed, with a reference held for the caller.
func (l *Locker) bind(ctx context.Context) (*binding, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	obj := l.obj
	l.mu.Unlock()

	t, err := resolve(ctx, l.reader, obj)
	if err != nil {
		return nil, err
	}
	fp := t.fingerprint()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.current == nil || l.current.fingerprint != fp {
		locker, clients, err := t.connect(l.opts)
		if err != nil {
			return nil, err
		}
		l.retire(l.current)
		l.current = &binding{fingerprint: fp, key: t.key, locker: locker, clients: clients}
	}
	l.current.leases++
	return l.current, nil
}

// retire stops handing out b; it closes when its last lease ends. Callers hold l.mu.
func (l *Locker) retire(b *binding) {
	if b == nil {
		return
	}
	if b.leases == 0 {
		b.close()
		return
	}
	l.retired = append(l.retired, b)
}

func (l *Locker) unref(b *binding) {
	l.mu.Lock()
	b.leases--
	retiredAndIdle := false
	if b.leases == 0 && b != l.current {
		for i, r := range l.retired {
			if r == b {
				l.retired = append(l.retired[:i], l.retired[i+1:]...)
				retiredAndIdle = true
				break
			}
		}
	}
	l.mu.Unlock()
	if retiredAndIdle {
		// lock.Locker.Close waits for the last release to reach Redis
		// before the clients close.
		_ = b.close()
	}
}

func (b *binding) close() error {
	err := b.locker.Close()
	closeAll(b.clients)
	if errors.Is(err, lock.ErrClosed) {
		return nil
	}
	return err
}

// Close stops following the resource and closes every connection; leases
// still held are released (lock.Locker.Close).
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	bindings := append(l.retired, l.current)
	l.retired, l.current = nil, nil
	l.mu.Unlock()

	l.stopWatch()
	<-l.watchDone
	var errs []error
	for _, b := range bindings {
		if b != nil {
			errs = append(errs, b.close())
		}
	}
	return errors.Join(errs...)
}

func (l *Locker) observe(dl *v1alpha1.DistributedLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obj = dl
}

// Inspect reads the key's holder, remaining TTL and fence counter from Redis
// (never the lock value). The resource must be Ready.
func (l *Locker) Inspect(ctx context.Context) (lock.Holding, error) {
	b, err := l.bind(ctx)
	if err != nil {
		return lock.Holding{}, err
	}
	defer l.unref(b)
	return b.locker.Inspect(ctx, b.key)
}

// Resource returns a copy of the DistributedLock as last seen.
func (l *Locker) Resource() *v1alpha1.DistributedLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.obj.DeepCopy()
}

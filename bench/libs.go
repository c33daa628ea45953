package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// Family names group rows: "best peer" is the best row whose family is a
// peer library.
const (
	FamilyFloor       = "floor"
	FamilyFencedFloor = "fenced floor" // the floor of a lock that hands out fences (NewFencedFloor)
	FamilyRedlease    = "redlease"
	FamilyRedsync     = "redsync"
	FamilyRedislock   = "redislock"
)

// IsPeer reports whether a family is one of the peer libraries.
func IsPeer(family string) bool { return family == FamilyRedsync || family == FamilyRedislock }

// Release gives a held lock back.
type Release func(ctx context.Context) error

// LockFunc blocks until it holds key, or fails when ctx ends.
type LockFunc func(ctx context.Context, key string) (Release, error)

// Lib is one library configured one way (or the raw floor): the unit a row
// of a results table describes.
type Lib struct {
	Name   string // row label, e.g. "redsync (tuned)"
	Family string // FamilyFloor, FamilyRedlease, ...
	Tuning string // the options that differ from the library's defaults, "" for none
	// Variant names a group of tunings of one peer (contended scenario);
	// reports show the best of each group. Empty: always shown.
	Variant string

	worker func(i int) LockFunc
	// cpu is the CPU time so far of the process the row goes through
	// besides this one (the lock agent); nil for a library in this process.
	cpu    func() time.Duration
	mu     sync.Mutex
	closes []func()
}

// Worker returns the lock function goroutine i uses. Libraries whose handle
// is meant to be shared by a process return the same one for every i.
func (l *Lib) Worker(i int) LockFunc { return l.worker(i) }

// Close frees what the library holds (Lockers, dedicated connections).
func (l *Lib) Close() {
	l.mu.Lock()
	closes := l.closes
	l.closes = nil
	l.mu.Unlock()
	for _, c := range closes {
		c()
	}
}

func (l *Lib) onClose(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closes = append(l.closes, f)
}

// floorDelete is the minimal owner-only delete: compare, then DEL.
var floorDelete = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// fencedTake is the least a fenced lock can do in one round trip: SET NX PX
// and, only when that took the key, INCR of the key's fence counter, in one
// script so that no other client's grant can come between the two. It
// returns the new fence, or 0 when the key was held (no fence is spent).
var fencedTake = redis.NewScript(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0`)

var floorSeq atomic.Uint64

// errHeld is a floor's answer to a key someone holds: the floors do not
// wait, so a held key is an error.
var errHeld = errors.New("held")

// floorValue is a value no other floor acquisition in this process uses.
func floorValue() string { return strconv.FormatUint(floorSeq.Add(1), 10) }

// floorRelease deletes key if it still holds value: the compare-and-delete
// both floors release with.
func floorRelease(ctx context.Context, c redis.Scripter, key, value string) error {
	n, err := floorDelete.Run(ctx, c, []string{key}, value).Int()
	if err != nil {
		return fmt.Errorf("floor: release %q: %w", key, err)
	}
	if n != 1 {
		return fmt.Errorf("floor: %q was not ours at release", key)
	}
	return nil
}

// fenceKey is the counter that fences key: it shares key's hash tag (or
// makes key its tag) so that the acquire script's two keys are in one slot,
// as a Cluster requires, and not only on the one server the runner starts.
func fenceKey(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":fence" // key's own tag comes first and applies to both
		}
	}
	return "{" + key + "}:fence"
}

// fencedAcquire takes key for value with the fenced floor's script and
// returns its fence (1, 2, ... per key); errHeld when someone holds key.
func fencedAcquire(ctx context.Context, c redis.Scripter, key, value string, ttl time.Duration) (int64, error) {
	fence, err := fencedTake.Run(ctx, c, []string{key, fenceKey(key)}, value, ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("fenced floor: acquire %q: %w", key, err)
	}
	if fence == 0 {
		return 0, fmt.Errorf("fenced floor: %q: %w", key, errHeld)
	}
	return fence, nil
}

// dedicated hands every goroutine a connection of its own, made on first
// use, as the floors' least-overhead clients have; close closes them all.
func dedicated(client *redis.Client) (conn func(i int) *redis.Conn, closeAll func()) {
	var mu sync.Mutex
	conns := map[int]*redis.Conn{}
	conn = func(i int) *redis.Conn {
		mu.Lock()
		defer mu.Unlock()
		c := conns[i]
		if c == nil {
			c = client.Conn()
			conns[i] = c
		}
		return c
	}
	closeAll = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	return conn, closeAll
}

// NewFloor is the round-trip floor: SET key value NX PX ttl, then an EVALSHA
// compare-and-delete, each goroutine on its own connection, with a counter
// for a value and nothing else (no waiting: a held key is an error).
func NewFloor(client *redis.Client, ttl time.Duration) *Lib {
	l := &Lib{Name: "raw floor", Family: FamilyFloor, Tuning: "SET NX PX + EVALSHA compare-and-delete, one connection"}
	conn, closeAll := dedicated(client)
	l.worker = func(i int) LockFunc {
		c := conn(i)
		return func(ctx context.Context, key string) (Release, error) {
			v := floorValue()
			ok, err := c.SetNX(ctx, key, v, ttl).Result()
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("floor: %q: %w", key, errHeld)
			}
			return func(ctx context.Context) error { return floorRelease(ctx, c, key, v) }, nil
		}
	}
	l.onClose(closeAll)
	return l
}

// NewFencedFloor is the floor of a fenced lock (issue 45): one EVALSHA that
// runs SET NX PX and, when it took the key, INCR of the key's fence counter
// (fenceKey), then the raw floor's compare-and-delete; each goroutine on
// its own connection, no waiting. A lock that hands out fences cannot do
// less in two round trips, so redlease's goals are ratios to this row and
// not to the raw floor, which has no fence.
func NewFencedFloor(client *redis.Client, ttl time.Duration) *Lib {
	l := &Lib{Name: "fenced floor", Family: FamilyFencedFloor,
		Tuning: "EVALSHA {SET NX PX; INCR {key}:fence} + EVALSHA compare-and-delete, one connection"}
	conn, closeAll := dedicated(client)
	l.worker = func(i int) LockFunc {
		c := conn(i)
		return func(ctx context.Context, key string) (Release, error) {
			v := floorValue()
			if _, err := fencedAcquire(ctx, c, key, v, ttl); err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return floorRelease(ctx, c, key, v) }, nil
		}
	}
	l.onClose(closeAll)
	return l
}

// NewFloorRedlock is the floor over several nodes: the same two commands,
// sent to every node in parallel (one connection per node and goroutine),
// counting a majority.
func NewFloorRedlock(clients []*redis.Client, ttl time.Duration) *Lib {
	l := &Lib{Name: "raw floor", Family: FamilyFloor, Tuning: fmt.Sprintf("SET NX PX + EVALSHA compare-and-delete on %d nodes in parallel", len(clients))}
	var mu sync.Mutex
	conns := map[int][]*redis.Conn{}
	quorum := len(clients)/2 + 1
	l.worker = func(i int) LockFunc {
		mu.Lock()
		cs := conns[i]
		if cs == nil {
			for _, c := range clients {
				cs = append(cs, c.Conn())
			}
			conns[i] = cs
		}
		mu.Unlock()
		fan := func(op func(*redis.Conn) bool) int {
			var wg sync.WaitGroup
			var n atomic.Int32
			for _, c := range cs {
				wg.Go(func() {
					if op(c) {
						n.Add(1)
					}
				})
			}
			wg.Wait()
			return int(n.Load())
		}
		return func(ctx context.Context, key string) (Release, error) {
			v := floorValue()
			del := func(c *redis.Conn) bool {
				n, err := floorDelete.Run(ctx, c, []string{key}, v).Int()
				return err == nil && n == 1
			}
			if n := fan(func(c *redis.Conn) bool { ok, err := c.SetNX(ctx, key, v, ttl).Result(); return err == nil && ok }); n < quorum {
				fan(del)
				return nil, fmt.Errorf("floor: %q acquired on %d nodes only", key, n)
			}
			return func(context.Context) error {
				if n := fan(del); n < quorum {
					return fmt.Errorf("floor: %q released on %d nodes only", key, n)
				}
				return nil
			}, nil
		}
	}
	l.onClose(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, cs := range conns {
			for _, c := range cs {
				_ = c.Close()
			}
		}
	})
	return l
}

// leaseLock is the LockFunc of one of a Locker's single-key calls
// (Acquire, AcquireShared, TryAcquire): the lease's Release gives the key
// back.
func leaseLock(take func(context.Context, string) (*lock.Lease, error)) LockFunc {
	return func(ctx context.Context, key string) (Release, error) {
		lease, err := take(ctx, key)
		if err != nil {
			return nil, err
		}
		return lease.Release, nil
	}
}

// redleaseLock takes the key with Acquire: the cycle of every redlease row
// but the lock family's shared and multi-key ones (family.go).
func redleaseLock(l *lock.Locker) LockFunc { return leaseLock(l.Acquire) }

// NewRedlease is one lock.Locker shared by every goroutine, as the library
// means it to be used.
func NewRedlease(name, tuning string, client redis.UniversalClient, opts ...lock.Option) (*Lib, error) {
	return newRedleaseCycle(name, tuning, redleaseLock, client, opts...)
}

// newRedleaseCycle is NewRedlease with cycle(l) as each cycle's lock: a
// call of the Locker other than Acquire (family.go).
func newRedleaseCycle(name, tuning string, cycle func(*lock.Locker) LockFunc, client redis.UniversalClient, opts ...lock.Option) (*Lib, error) {
	l, err := lock.New(client, opts...)
	return sharedRedlease(name, tuning, l, err, cycle)
}

// sharedRedlease wraps one Locker that every goroutine shares, taking keys
// with cycle(l).
func sharedRedlease(name, tuning string, l *lock.Locker, err error, cycle func(*lock.Locker) LockFunc) (*Lib, error) {
	if err != nil {
		return nil, err
	}
	lib := &Lib{Name: name, Family: FamilyRedlease, Tuning: tuning, worker: shared(cycle(l))}
	lib.onClose(func() { _ = l.Close() })
	return lib, nil
}

// NewRedleasePerWorker gives every goroutine a Locker of its own, as
// separate processes would have: each has its own subscription, and a
// release wakes one waiter in every Locker.
func NewRedleasePerWorker(name, tuning string, client redis.UniversalClient, opts ...lock.Option) (*Lib, error) {
	return redleasePerWorker(name, tuning, func() redis.UniversalClient { return client }, redleaseLock, opts...)
}

// redleasePerWorker is NewRedleasePerWorker with every worker's Locker on
// the client newClient returns when the worker first asks (one for all, or
// one each, as separate pods would have) and taking keys with cycle.
func redleasePerWorker(name, tuning string, newClient func() redis.UniversalClient, cycle func(*lock.Locker) LockFunc, opts ...lock.Option) (*Lib, error) {
	probe, err := lock.New(newClient(), opts...) // validate once, up front
	if err != nil {
		return nil, err
	}
	_ = probe.Close() // it held nothing
	lib := &Lib{Name: name, Family: FamilyRedlease, Tuning: tuning}
	var mu sync.Mutex
	lockers := map[int]*lock.Locker{}
	lib.worker = func(i int) LockFunc {
		mu.Lock()
		defer mu.Unlock()
		l := lockers[i]
		if l == nil {
			l, _ = lock.New(newClient(), opts...)
			lockers[i] = l
		}
		return cycle(l)
	}
	lib.onClose(func() {
		mu.Lock()
		defer mu.Unlock()
		var wg sync.WaitGroup
		for _, l := range lockers {
			wg.Go(func() { _ = l.Close() })
		}
		wg.Wait()
	})
	return lib, nil
}

// NewRedlockRedlease is lock.NewRedlock over clients, shared by every goroutine.
func NewRedlockRedlease(name, tuning string, clients []redis.UniversalClient, opts ...lock.Option) (*Lib, error) {
	l, err := lock.NewRedlock(clients, opts...)
	return sharedRedlease(name, tuning, l, err, redleaseLock)
}

// NewRedsync is redsync over one pool per client (one client: a single
// Redis; several: Redlock). A Mutex is made per Lock call, with the given
// expiry and options. When Lock gives up after its tries (ErrFailed) the
// caller tries again until ctx ends, as an application that must get the
// lock would.
func NewRedsync(name, tuning string, clients []*redis.Client, ttl time.Duration, opts ...redsync.Option) *Lib {
	pools := make([]redsyncredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = goredis.NewPool(c)
	}
	rs := redsync.New(pools...)
	opts = append([]redsync.Option{redsync.WithExpiry(ttl)}, opts...)
	f := func(ctx context.Context, key string) (Release, error) {
		m := rs.NewMutex(key, opts...)
		for {
			err := m.LockContext(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("redsync: %w (%w)", ctx.Err(), err)
			}
			var taken *redsync.ErrTaken
			if !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
				return nil, err
			}
		}
		return func(ctx context.Context) error {
			ok, err := m.UnlockContext(ctx)
			if err == nil && !ok {
				err = errors.New("redsync: unlock failed")
			}
			return err
		}, nil
	}
	return &Lib{Name: name, Family: FamilyRedsync, Tuning: tuning, worker: func(int) LockFunc { return f }}
}

// NewRedislock is bsm/redislock on client with a fresh retry strategy per
// Obtain (its strategies keep state). When Obtain gives up (ErrNotObtained,
// or its own deadline) the caller tries again until ctx ends.
func NewRedislock(name, tuning string, client *redis.Client, ttl time.Duration, strategy func() redislock.RetryStrategy) *Lib {
	rl := redislock.New(client)
	f := func(ctx context.Context, key string) (Release, error) {
		for {
			var opt *redislock.Options
			if strategy != nil {
				opt = &redislock.Options{RetryStrategy: strategy()}
			}
			lk, err := rl.Obtain(ctx, key, ttl, opt)
			if err == nil {
				return lk.Release, nil
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("redislock: %w (%w)", ctx.Err(), err)
			}
			if !errors.Is(err, redislock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
		}
	}
	return &Lib{Name: name, Family: FamilyRedislock, Tuning: tuning, worker: func(int) LockFunc { return f }}
}

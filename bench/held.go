package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// Holder keeps many leases alive: redlease with its watchdog, or a peer
// with the refresh loop an application has to write for it.
type Holder struct {
	Name, Family, Tuning string

	acquire func(ctx context.Context, key string) error // takes key and starts keeping it alive
	lost    func() int                                  // leases no longer held
	close   func()                                      // stops renewing and releases everything
}

// HeldResult is what keeping Leases leases alive cost during Window.
type HeldResult struct {
	Name, Family, Tuning string
	Leases               int
	TTL, Renew           time.Duration
	Window               time.Duration
	AcquireWall          time.Duration // to take all the leases
	ProcCPU              time.Duration // user+system CPU of this process during the window
	RedisCPU             time.Duration // redis-server's used_cpu_user+used_cpu_sys during the window
	Commands             int64         // total_commands_processed during the window (commands run by scripts included), ours excluded
	Scripts              int64         // EVALSHA and EVAL calls during the window (one per renewal)
	Goroutines           int           // in this process during the window
	Lost                 int           // leases no longer held at the end of the window
}

// CPUCores is the process CPU as a share of one core.
func (r HeldResult) CPUCores() float64 { return r.ProcCPU.Seconds() / r.Window.Seconds() }

// CommandsPerSec is Redis's command rate during the window.
func (r HeldResult) CommandsPerSec() float64 { return float64(r.Commands) / r.Window.Seconds() }

// ScriptsPerSec is the rate of script calls (renewals) during the window.
func (r HeldResult) ScriptsPerSec() float64 { return float64(r.Scripts) / r.Window.Seconds() }

// NewRedleaseHolder holds leases with one lock.Locker and its watchdog.
func NewRedleaseHolder(client redis.UniversalClient, ttl, renew time.Duration) (*Holder, error) {
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithRenewInterval(renew))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var leases []*lock.Lease
	return &Holder{
		Name: "redlease", Family: FamilyRedlease, Tuning: "watchdog (timers, no goroutine per lease)",
		acquire: func(ctx context.Context, key string) error {
			lease, err := l.TryAcquire(ctx, key)
			if err != nil {
				return err
			}
			mu.Lock()
			leases = append(leases, lease)
			mu.Unlock()
			return nil
		},
		lost: func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, lease := range leases {
				if lease.Err() != nil {
					n++
				}
			}
			return n
		},
		close: func() { _ = l.Close() },
	}, nil
}

// refresher runs the loop a peer library leaves to its user: a goroutine
// per lease with a ticker, refreshing until stopped or refused.
type refresher struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	lost     atomic.Int64
	mu       sync.Mutex
	releases []func(context.Context) error
}

func newRefresher() *refresher { return &refresher{stop: make(chan struct{})} }

func (r *refresher) keep(every time.Duration, refresh func(context.Context) error, release func(context.Context) error) {
	r.mu.Lock()
	r.releases = append(r.releases, release)
	r.mu.Unlock()
	r.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), every)
				err := refresh(ctx)
				cancel()
				if err != nil {
					r.lost.Add(1)
					return
				}
			}
		}
	})
}

func (r *refresher) close() {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	releases := r.releases
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	parallel(len(releases), 32, func(i int) { _ = releases[i](ctx) })
}

// NewRedsyncHolder holds leases with redsync Mutexes and a refresh loop
// calling Mutex.Extend.
func NewRedsyncHolder(client *redis.Client, ttl, renew time.Duration) *Holder {
	rs := redsync.New(goredis.NewPool(client))
	r := newRefresher()
	return &Holder{
		Name: "redsync", Family: FamilyRedsync, Tuning: "goroutine + ticker per lease calling Mutex.Extend",
		acquire: func(ctx context.Context, key string) error {
			m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			r.keep(renew, func(ctx context.Context) error {
				ok, err := m.ExtendContext(ctx)
				if err == nil && !ok {
					err = errors.New("redsync: extend refused")
				}
				return err
			}, func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err })
			return nil
		},
		lost:  func() int { return int(r.lost.Load()) },
		close: r.close,
	}
}

// NewRedislockHolder holds leases with bsm/redislock and a refresh loop
// calling Lock.Refresh.
func NewRedislockHolder(client *redis.Client, ttl, renew time.Duration) *Holder {
	rl := redislock.New(client)
	r := newRefresher()
	return &Holder{
		Name: "redislock", Family: FamilyRedislock, Tuning: "goroutine + ticker per lease calling Lock.Refresh",
		acquire: func(ctx context.Context, key string) error {
			lk, err := rl.Obtain(ctx, key, ttl, nil)
			if err != nil {
				return err
			}
			r.keep(renew, func(ctx context.Context) error { return lk.Refresh(ctx, ttl, nil) }, lk.Release)
			return nil
		},
		lost:  func() int { return int(r.lost.Load()) },
		close: r.close,
	}
}

// Held takes n leases with h (keys prefix:0..n-1), lets renewal settle,
// then measures one window: this process's CPU time (getrusage), Redis's
// command count and CPU (INFO), and how many leases were lost.
func Held(ctx context.Context, srv *Server, admin *redis.Client, h *Holder, n int, ttl, renew, window time.Duration, prefix string) (HeldResult, error) {
	res := HeldResult{Name: h.Name, Family: h.Family, Tuning: h.Tuning, Leases: n, TTL: ttl, Renew: renew, Window: window}
	defer h.close()
	start := time.Now()
	var failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	parallel(n, 32, func(i int) {
		if err := h.acquire(ctx, prefix+":"+strconv.Itoa(i)); err != nil {
			failed.Add(1)
			errOnce.Do(func() { firstErr = err })
		}
	})
	res.AcquireWall = time.Since(start)
	if f := failed.Load(); f > 0 {
		return res, fmt.Errorf("%s: %d of %d acquisitions failed: %w", h.Name, f, n, firstErr)
	}
	// Every lease has been renewed at least once before the window opens.
	if err := sleep(ctx, renew+renew/2); err != nil {
		return res, err
	}
	cpu0 := processCPU()
	info0, err := srv.Info(ctx, admin, "stats", "cpu", "commandstats")
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := sleep(ctx, window/2); err != nil {
		return res, err
	}
	res.Goroutines = runtime.NumGoroutine()
	if err := sleep(ctx, window-window/2); err != nil {
		return res, err
	}
	info1, err := srv.Info(ctx, admin, "stats", "cpu", "commandstats")
	if err != nil {
		return res, err
	}
	res.ProcCPU = processCPU() - cpu0
	res.Window = time.Since(t0)
	// The first INFO is counted in the second snapshot.
	res.Commands = infoInt(info1, "total_commands_processed") - infoInt(info0, "total_commands_processed") - 1
	res.Scripts = scriptCalls(info1) - scriptCalls(info0)
	res.RedisCPU = redisCPU(info1) - redisCPU(info0)
	res.Lost = h.lost()
	return res, nil
}

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scriptCalls sums the calls of EVALSHA, EVAL and FCALL in INFO
// commandstats: a Locker calls the library's functions where an earlier
// scenario loaded it on the server.
func scriptCalls(info map[string]string) int64 {
	return ParseCommandStats(info).Calls("evalsha", "eval", "fcall")
}

// Load is what Redis servers did: the commands they processed (those
// scripts ran included), redis-server's CPU time (user and system) and
// INFO commandstats; and what the clients sent them (Sent), which tells
// the calls they sent from the commands their scripts ran.
type Load struct {
	Commands int64
	CPU      time.Duration
	Stats    CommandStats
	Sent     Counts
}

// Add is l and o together.
func (l Load) Add(o Load) Load {
	return Load{Commands: l.Commands + o.Commands, CPU: l.CPU + o.CPU, Stats: l.Stats.Add(o.Stats), Sent: l.Sent.Add(o.Sent)}
}

// Sub is l less o.
func (l Load) Sub(o Load) Load {
	return Load{Commands: l.Commands - o.Commands, CPU: l.CPU - o.CPU, Stats: l.Stats.Sub(o.Stats), Sent: l.Sent.Sub(o.Sent)}
}

// CommandMicros is the servers' command time for what the clients sent
// (CommandStats.SentMicros), in µs.
func (l Load) CommandMicros() float64 { return l.Stats.SentMicros(l.Sent) }

// ServerLoad sums the servers' load so far (one INFO per server, on
// admins[i], which counts as one command). Sent is left empty: the
// servers do not know it.
func ServerLoad(ctx context.Context, srvs []*Server, admins []*redis.Client) (Load, error) {
	var l Load
	for i, s := range srvs {
		info, err := s.Info(ctx, admins[i], "stats", "cpu", "commandstats")
		if err != nil {
			return Load{}, err
		}
		l.Commands += infoInt(info, "total_commands_processed")
		l.CPU += redisCPU(info)
		l.Stats = l.Stats.Add(ParseCommandStats(info))
	}
	return l, nil
}

func redisCPU(info map[string]string) time.Duration {
	return infoSeconds(info, "used_cpu_user") + infoSeconds(info, "used_cpu_sys")
}

func infoInt(m map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(m[k], 10, 64)
	return v
}

func infoSeconds(m map[string]string, k string) time.Duration {
	v, _ := strconv.ParseFloat(m[k], 64)
	return time.Duration(v * float64(time.Second))
}

// parallel calls f(0..n-1) on at most width goroutines.
func parallel(n, width int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(width, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

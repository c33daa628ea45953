package chaos

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Semaphores under faults: N+2 helper processes take permits of one
// semaphore in loops while the test SIGKILLs and SIGSTOPs them at random.
// Helpers report "holding" with the widest claim they may act on as soon
// as they believe they hold a permit (again whenever a renewal widens it),
// and "claim" with the claim as it ended when they stopped, before they
// send the release: a helper SIGSTOPped or SIGKILLed with its release in
// flight no longer believes, and the test must know it before the permit
// can go to another (reported after the release, such a helper's last
// "holding" stood for it until the kill, and the checker counted a holder
// Redis no longer had: 4 of 3 in CI, with the server never above 3).

// holdTime is HOLD when set, else 10 to 150 ms at random.
func holdTime() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("HOLD")); err == nil {
		return d
	}
	return time.Duration(10+rand.IntN(140)) * time.Millisecond //nolint:gosec // G404: random holds; timing needs no cryptographic randomness
}

// permitRounds is ROUNDS, or 0 (until killed).
func permitRounds() int {
	n, _ := strconv.Atoi(os.Getenv("ROUNDS"))
	return n
}

// permitLoop takes a permit of the PERMITS-permit semaphore at key with
// redlease ROUNDS times (0: until killed), holding each holdTime.
func permitLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	permits, _ := strconv.Atoi(os.Getenv("PERMITS"))
	id := "permit-" + strconv.Itoa(os.Getpid())
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithIdentity(id))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // nothing is held by then; the process exits next
	sem := l.Semaphore(key, permits)
	for i := 0; permitRounds() == 0 || i < permitRounds(); i++ {
		lease, err := sem.Acquire(ctx)
		if err != nil {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		c := Claim{Client: id, Key: key, Fence: lease.Fence(), From: Mono(), Until: MonoAt(lease.ValidUntil())}
		emit(event{Kind: "holding", Claim: &c})
		for end := time.Now().Add(holdTime()); time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			if u := MonoAt(lease.ValidUntil()); u > c.Until+int64(time.Millisecond) { // renewed
				c.Until = u
				emit(event{Kind: "holding", Claim: &c})
			}
		}
		c.Until = min(Mono(), MonoAt(lease.ValidUntil()))
		emit(event{Kind: "claim", Claim: &c})
		_ = lease.Release(ctx) // ErrLeaseLost after a pause past the deadline: the claim above ended there
	}
	return 0
}

// naiveCounterLoop is the counter semaphore of many blog posts: INCR the
// key, DECR it again when above PERMITS, else hold; an expiry on the
// counter, refreshed while held, is meant to give back the permits of
// holders that died; release is DECR, with no owner check. A holder
// believes it holds its permit until its DECR: a counter has no deadline
// for it to watch.
func naiveCounterLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	permits, _ := strconv.ParseInt(os.Getenv("PERMITS"), 10, 64)
	id := "naive-" + strconv.Itoa(os.Getpid())
	for i := 0; permitRounds() == 0 || i < permitRounds(); {
		n, err := client.Incr(ctx, key).Result()
		if err != nil || n > permits {
			client.Decr(ctx, key)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		i++
		client.PExpire(ctx, key, ttl)
		c := Claim{Client: id, Key: key, From: Mono(), Until: Mono() + int64(time.Hour)}
		emit(event{Kind: "holding", Claim: &c})
		for end := time.Now().Add(holdTime()); time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			client.PExpire(ctx, key, ttl) // the "watchdog"
		}
		c.Until = Mono()
		emit(event{Kind: "claim", Claim: &c})
		client.Decr(ctx, key)
	}
	return 0
}

// The naive expiring semaphore: permits with an expiry, as Redisson's
// permit-expirable semaphore has, but no owner check: the renewal re-adds a
// permit that expired, and the release removes whichever permit expires
// first. A holder believes until its release: it has no local deadline.
var (
	naiveTake = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + ARGV[3], ARGV[1])
return 1`)
	naiveRenew = redis.NewScript(`
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000) + ARGV[2], ARGV[1])
return 1`)
	naiveGive = redis.NewScript(`return redis.call('ZPOPMIN', KEYS[1])`)
)

// naiveExpiringLoop takes a permit of the naive expiring semaphore ROUNDS
// times (0: until killed), holding each holdTime and renewing it every
// 5 ms.
func naiveExpiringLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	permits := os.Getenv("PERMITS")
	id := "naive-" + strconv.Itoa(os.Getpid())
	for i := 0; permitRounds() == 0 || i < permitRounds(); {
		if n, err := naiveTake.Run(ctx, client, []string{key}, id, permits, ttl.Milliseconds()).Int(); err != nil || n == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		i++
		c := Claim{Client: id, Key: key, From: Mono(), Until: Mono() + int64(time.Hour)}
		emit(event{Kind: "holding", Claim: &c})
		for end := time.Now().Add(holdTime()); time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			naiveRenew.Run(ctx, client, []string{key}, id, ttl.Milliseconds())
		}
		c.Until = Mono()
		emit(event{Kind: "claim", Claim: &c})
		naiveGive.Run(ctx, client, []string{key})
	}
	return 0
}

// permitWorker is one helper process of the scenario and what it claimed.
type permitWorker struct {
	h       *helper
	killed  atomic.Int64 // Mono() when SIGKILLed; 0 while alive
	holding atomic.Bool  // between its "holding" and its "claim"
	done    chan struct{}
}

// startPermitWorker starts role and records its claims in s's history as
// they end: a "claim" as reported; the last "holding" of a helper killed
// while holding, ending when it died if that is earlier (a dead process
// believes nothing).
func (s *scenario) startPermitWorker(role string, env map[string]string) *permitWorker {
	w := &permitWorker{h: startHelper(s.t, role, env), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var open *Claim
		for e := range w.h.events {
			switch e.Kind {
			case "holding":
				open = e.Claim
				w.holding.Store(true)
			case "claim":
				s.h.Claim(*e.Claim)
				open = nil
				w.holding.Store(false)
			case "error":
				s.t.Errorf("helper: %s", e.Error)
			}
		}
		if open != nil {
			if k := w.killed.Load(); k > 0 {
				open.Until = min(open.Until, k)
			}
			s.h.Claim(*open)
		}
	}()
	return w
}

func (w *permitWorker) kill() {
	w.killed.CompareAndSwap(0, Mono())
	w.h.signal(syscall.SIGKILL)
	_ = w.h.cmd.Wait()
	<-w.done
}

// pick chooses the victim of the next fault: a worker holding a permit, at
// random, when there is one (the faults that matter), else any worker.
func pick(r *rand.Rand, workers []*permitWorker) int {
	var holding []int
	for i, w := range workers {
		if w.holding.Load() {
			holding = append(holding, i)
		}
	}
	if len(holding) == 0 {
		return r.IntN(len(workers))
	}
	return holding[r.IntN(len(holding))]
}

// Five helper processes take permits of a 3-permit semaphore in loops
// (TTL 600 ms, watchdog on); every 20 to 200 ms one of them, a holder when
// one holds, is SIGKILLed (and replaced) or SIGSTOPped for 100 ms to 1.5 s.
// redlease: never more than 3 claimed validity windows overlap (a dead
// holder's permit comes back only when its TTL runs out, a paused holder's
// claim ends at its local deadline). Naive: expiring permits without an
// owner check or a local deadline: a holder paused past its TTL still
// believes, and its renewal puts its permit back beside the one given in
// its place; the same checker counts more than 3 holders.
func TestPermitHoldersKilledAndPaused(t *testing.T) {
	variants(t, "redlease", "naive expiring semaphore without owner check", time.Minute, func(t *testing.T, s *scenario) {
		r := rng(t)
		srv := redistest.StartStandalone(t)
		const permits, key = 3, "pool"
		role := "permit-loop"
		if s.naive {
			role = "naive-expiring-loop"
		}
		env := map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": "600ms", "PERMITS": strconv.Itoa(permits)}
		workers := make([]*permitWorker, permits+2)
		for i := range workers {
			workers[i] = s.startPermitWorker(role, env)
		}
		var (
			resumes       sync.WaitGroup
			kills, pauses int
		)
		budget := time.Duration(rounds(4, 30)) * time.Second
		for end := time.Now().Add(budget); time.Now().Before(end); {
			time.Sleep(time.Duration(20+r.IntN(180)) * time.Millisecond)
			i := pick(r, workers)
			if r.IntN(2) == 0 {
				workers[i].kill()
				workers[i] = s.startPermitWorker(role, env)
				kills++
				continue
			}
			h := workers[i].h
			h.signal(syscall.SIGSTOP)
			pause := time.Duration(100+r.IntN(1400)) * time.Millisecond
			resumes.Go(func() {
				time.Sleep(pause)
				h.signal(syscall.SIGCONT) // a no-op if it was killed meanwhile
			})
			pauses++
		}
		resumes.Wait()
		time.Sleep(200 * time.Millisecond) // the last resumed finish their holds
		for _, w := range workers {
			w.kill()
		}
		claims := s.h.Claims()
		t.Logf("%d kills, %d pauses, %d claims", kills, pauses, len(claims))
		if len(claims) < 10 { // 26 to 167 measured in 4 s
			t.Fatalf("only %d claims in %v: the holders made no progress", len(claims), budget)
		}
		s.check("S1 (at most 3 holders)", MaxConcurrent(claims, permits))
	})
}

// All three holders of a 3-permit semaphore fail together: two are
// SIGKILLed, the third SIGSTOPped for 2 s; three newcomers ask meanwhile.
// redlease: the newcomers get the permits as the TTL (600 ms) runs out,
// when the paused holder's claim has ended at its local deadline; at most 3
// overlap. Naive INCR/DECR counter: the dead holders' increments stay
// until the whole counter expires, which gives every permit back at once,
// the paused one's included, while it still believes; the checker counts 4.
func TestPermitHoldersFailTogether(t *testing.T) {
	variants(t, "redlease", "naive INCR/DECR counter semaphore", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		const permits, key = 3, "together"
		role := "permit-loop"
		if s.naive {
			role = "naive-counter-loop"
		}
		env := map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": "600ms", "PERMITS": strconv.Itoa(permits), "HOLD": "10s", "ROUNDS": "1"}
		holders := make([]*permitWorker, permits)
		for i := range holders {
			holders[i] = s.startPermitWorker(role, env)
		}
		waitFor(t, 10*time.Second, "three holders", func() bool {
			return holders[0].holding.Load() && holders[1].holding.Load() && holders[2].holding.Load()
		})
		holders[0].kill()
		holders[1].kill()
		holders[2].h.signal(syscall.SIGSTOP)
		env["HOLD"] = "300ms"
		newcomers := make([]*permitWorker, permits)
		for i := range newcomers {
			newcomers[i] = s.startPermitWorker(role, env)
		}
		time.Sleep(2 * time.Second)
		holders[2].h.signal(syscall.SIGCONT)
		for _, w := range newcomers {
			select {
			case <-w.done:
			case <-time.After(10 * time.Second):
				t.Fatal("a newcomer never got a permit")
			}
		}
		holders[2].kill()
		s.check("S1 (at most 3 holders)", MaxConcurrent(s.h.Claims(), permits))
	})
}

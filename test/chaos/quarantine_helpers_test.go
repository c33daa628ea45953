package chaos

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// Helper roles of the failover-quarantine scenarios. CUTOFF, when set,
// turns the quarantine on (missing epoch records wait, or with
// MISSING=new read as new keys); without it the helper is redlease without
// quarantine, the naive variant. ID names the client in the history;
// RENEW, if set, is its renewal interval.

// quarantineOptions are the Locker options the helper's environment asks for.
func quarantineOptions(ttl time.Duration) []lock.Option {
	opts := []lock.Option{lock.WithTTL(ttl), lock.WithIdentity(os.Getenv("ID")),
		lock.WithRetryBackoff(time.Millisecond, 20*time.Millisecond)}
	if d, err := time.ParseDuration(os.Getenv("RENEW")); err == nil {
		opts = append(opts, lock.WithRenewInterval(d))
	}
	if c := os.Getenv("CUTOFF"); c != "" {
		cutoff, _ := time.ParseDuration(c)
		missing := lock.MissingEpochWaits
		if os.Getenv("MISSING") == "new" {
			missing = lock.MissingEpochIsNew
		}
		opts = append(opts, lock.WithFailoverQuarantine(cutoff, missing))
	}
	return opts
}

// quarantineHolder takes key (waiting up to a minute, through any
// quarantine) and holds it, renewed by the watchdog, until the lease ends
// or HOLD (if set) passes, then releases it. It reports "holding" with the
// widest claim it may act on as soon as it holds (renewals widen it: the
// final "claim" is what counts), and "claim" when its belief ends.
func quarantineHolder(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	id := os.Getenv("ID")
	l, err := lock.New(client, quarantineOptions(ttl)...)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	lease, err := l.Acquire(actx, key)
	cancel()
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	from := Mono()
	emit(event{Kind: "holding", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: MonoAt(lease.ValidUntil())}})
	var hold <-chan time.Time
	if d, err := time.ParseDuration(os.Getenv("HOLD")); err == nil {
		hold = time.After(d)
	}
	select {
	case <-lease.Done():
	case <-hold:
	}
	until := min(Mono(), MonoAt(lease.ValidUntil()))
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	_ = lease.Release(rctx) // its belief ended above; the key may be gone, or its server
	cancel()
	emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: until}})
	return 0
}

// quarantineContender takes key again and again for FOR, holding it 20 ms
// each time, and reports each claim. Its first attempt is a TryAcquire:
// "first" reports the quarantine the server said was left (0 if none) and
// how long the first acquisition took from that attempt's send. It ends
// with "done".
func quarantineContender(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	id := os.Getenv("ID")
	run, _ := time.ParseDuration(os.Getenv("FOR"))
	l, err := lock.New(client, quarantineOptions(ttl)...)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // every lease is released below; the process exits next
	end := time.Now().Add(run)
	sent := Mono()
	lease, err := l.TryAcquire(ctx, key)
	var left time.Duration
	for first := true; time.Now().Before(end); first = false {
		if na := (*lock.NotAcquiredError)(nil); errors.As(err, &na) || lease == nil {
			if na != nil && first {
				left = na.Quarantine
			}
			actx, cancel := context.WithDeadline(ctx, end)
			lease, err = l.Acquire(actx, key)
			cancel()
			if err != nil {
				break // its time is up
			}
		}
		from := Mono()
		if first {
			emit(event{Kind: "first", Quarantine: left, Waited: time.Duration(from - sent)})
		}
		time.Sleep(20 * time.Millisecond)
		until := Mono()
		_ = lease.Release(ctx) // a failed release changes nothing here: its belief ended at until
		until = min(until, MonoAt(lease.ValidUntil()))
		emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: until}})
		lease = nil
	}
	emit(event{Kind: "done"})
	return 0
}

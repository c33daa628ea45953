package chaos

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// Helper roles that wait in a key's line. Each reports "holding" with the
// widest claim it may act on as soon as it believes it holds the key (so a
// SIGKILLed holder's claim is still on record), and "claim" with the claim
// as it ended after its release.

// lineWaiter acquires key ROUNDS times with redlease, holding it HOLD each time.
func lineWaiter(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	hold, _ := time.ParseDuration(os.Getenv("HOLD"))
	rounds, _ := strconv.Atoi(os.Getenv("ROUNDS"))
	id := "waiter-" + strconv.Itoa(os.Getpid())
	opts := []lock.Option{lock.WithTTL(ttl), lock.WithIdentity(id)}
	if os.Getenv("TICKETS") == "1" {
		opts = append(opts, lock.WithTicketOrder())
	}
	l, err := lock.New(client, opts...)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // nothing is held by then; the process exits next
	for range rounds {
		lease, err := l.Acquire(ctx, key)
		if err != nil {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		from := Mono()
		emit(event{Kind: "holding", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: MonoAt(lease.ValidUntil())}})
		time.Sleep(hold)
		until := Mono()
		if err := lease.Release(ctx); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		until = min(until, MonoAt(lease.ValidUntil()))
		emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: until}})
	}
	return 0
}

// naiveLineWaiter queues once in redlease's line with the protocol's own
// script and trusts the messages: it never looks at the key on its own, and
// its subscription, once broken, comes back only after a 2 s back-off. On
// the "granted" message naming it, with CONFIRM=1 it confirms with the
// acquire script, holds HOLD and releases; without, it takes the message
// itself as a lease valid for a TTL from when it reads it.
func naiveLineWaiter(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	id := "naive-" + strconv.Itoa(os.Getpid())
	value, err := protocol.NewValue(id)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	ps := client.Subscribe(ctx, protocol.EventsChannel(key))
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	args := protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: id, Place: time.Hour, Window: time.Second}
	res, err := protocol.ParseAttempt(protocol.AcquireScript.Run(ctx, client, protocol.AcquireKeys(key), args.Argv()...))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	if res.Acquired {
		emit(event{Kind: "error", Error: "naive waiter: the key was free; the scenario wants it queued"})
		return 1
	}
	want := protocol.ValueDigest(value)
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			time.Sleep(2 * time.Second) // back off, then go-redis resubscribes
			continue
		}
		// "granted <digest> [<next>]"
		if f := strings.Fields(msg.Payload); len(f) < 2 || f[0] != "granted" || f[1] != want {
			continue
		}
		if os.Getenv("CONFIRM") != "1" {
			from := Mono()
			emit(event{Kind: "holding", Claim: &Claim{Client: id, Key: key, From: from, Until: from + int64(ttl)}})
			return 0
		}
		return naiveConfirm(ctx, client, key, id, args)
	}
}

// naiveConfirm takes a key handed to args.Value, holds it HOLD and releases it.
func naiveConfirm(ctx context.Context, client *redis.Client, key, id string, args protocol.AcquireArgs) int {
	hold, _ := time.ParseDuration(os.Getenv("HOLD"))
	args.Queued = true
	from := Mono()
	res, err := protocol.ParseAttempt(protocol.AcquireScript.Run(ctx, client, protocol.AcquireKeys(key), args.Argv()...))
	if err != nil || !res.Acquired {
		emit(event{Kind: "error", Error: "naive waiter: its confirmation failed"})
		return 1
	}
	fence := res.Fence
	until := from + int64(args.TTL)
	emit(event{Kind: "holding", Claim: &Claim{Client: id, Key: key, Fence: fence, From: from, Until: until}})
	time.Sleep(hold)
	_, _ = protocol.Release(ctx, protocol.Scripts(client), key, args.Value, protocol.ReleaseArgs{Window: time.Second})
	emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: fence, From: from, Until: min(until, Mono())}})
	return 0
}

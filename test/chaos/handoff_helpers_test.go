package chaos

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// naiveCountingWaiter waits in key's line with the protocol's own scripts,
// trying again every 100 ms, and counts a hand-off (protocol 4) from its
// latest "not acquired" attempt, whatever counter that attempt saw (the
// rule DESIGN §10.1 forbids), or with historyBlind from its latest attempt
// that saw a lower counter than the hand-off's, whatever the counter's
// history (protocol 5's rule, which a counter that went back defeats). On
// the counted "granted" message naming it, it reports "holding" with the
// claim its rule gives (that attempt's send + the hand-off's expiry −
// drift) and exits.
func naiveCountingWaiter(ctx context.Context, client *redis.Client, key string, ttl time.Duration, historyBlind bool) int {
	id := "naive-" + strconv.Itoa(os.Getpid())
	value, err := protocol.NewValue(id)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	ps := client.Subscribe(ctx, protocol.EventsChannel(key), protocol.WaiterChannel(key, id))
	for range 2 { // the subscriptions' confirmations
		if _, err := ps.Receive(ctx); err != nil {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
	}
	msgs := ps.Channel() // reconnects on its own
	args := protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: id, Place: time.Hour, Window: time.Second}
	type attempt struct{ sent, counter int64 }
	var attempts []attempt // "not acquired" attempts: Mono() when sent, the counter seen
	want := protocol.ValueDigest(value)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		sent := Mono()
		res, err := protocol.ParseAttempt(protocol.AcquireScript.Run(ctx, client, protocol.AcquireKeys(key), args.Argv()...))
		switch {
		case err != nil:
		case res.Acquired:
			emit(event{Kind: "error", Error: "naive counting waiter: acquired by an attempt; the scenario wants a late notice"})
			return 1
		default:
			attempts = append(attempts, attempt{sent, res.Counter})
		}
		args.Queued = true
		select {
		case <-tick.C:
		case msg := <-msgs:
			kind, rest, _ := strings.Cut(msg.Payload, " ")
			g := protocol.ParseGrant(rest)
			if kind != "granted" || g.Digest != want || !g.Counted {
				continue
			}
			var start int64
			for _, a := range attempts {
				if !historyBlind || a.counter < g.Counter {
					start = a.sent
				}
			}
			if start == 0 {
				continue
			}
			from := Mono()
			until := start + int64(g.PX) - int64(g.PX)/100 - int64(2*time.Millisecond)
			emit(event{Kind: "holding", Claim: &Claim{Client: id, Key: key, Fence: uint64(g.Counter), From: from, Until: until}}) //nolint:gosec // G115: ParseGrant keeps a positive counter
			return 0
		}
	}
}

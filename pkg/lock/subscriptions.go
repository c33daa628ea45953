package lock

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The Locker's subscriptions: which channels are subscribed, on which
// connection (classic pub/sub, or one sharded subscription per Cluster
// slot), their confirmations, reconnections and slot moves. The receive
// loop hands each message to the wake-ups in waiting.go.

// subscriptionLinger is how long a key's channel stays subscribed after its
// last waiter left, so that a key contended again and again is not
// re-subscribed for every wait.
const subscriptionLinger = 30 * time.Second

// shardProbeTimeout bounds the question whether a ClusterClient's servers
// have sharded pub/sub, whatever the waiting caller's context.
const shardProbeTimeout = 5 * time.Second

// events is a Locker's one shared subscription (one per node for Redlock,
// where any node's message counts). Waiters for a key register here. A
// "granted <digest>" message (a release handed the key to the waiter whose
// value has that digest) wakes that waiter only; it comes on the key's
// waiter channel of this Locker's identity (protocol.WaiterChannel), so
// other processes do not even wake to read it, or on the events channel
// when the release found nobody there. A "released" message (no line, or a protocol-1 client) wakes the
// oldest local waiter (FIFO), so a release does not stampede every
// goroutine of the process at Redis. Messages are hints: a waiter also
// sleeps until the holder's TTL runs out, so a lost message costs latency,
// never progress.
type events struct {
	clients []redis.UniversalClient
	clock   Clock
	// identity names this Locker's waiter channels.
	identity string
	metrics  *metrics
	// waiterChannelsRefused (under mu): the server refused a waiter
	// channel's subscription (an ACL that names the events channels only):
	// this Locker waits on the events channels alone, where releases that
	// cannot tell a waiter channel tell everyone.
	waiterChannelsRefused bool
	// window is the hand-off window: when a hand-off is followed by
	// nothing within it (the chosen waiter may have died), the waiter
	// first in line looks again.
	window time.Duration

	// shardable: one ClusterClient, whose channels go on sharded pub/sub
	// when its servers have it (Redis 7.0 and later); known (under mu)
	// once a probe answered, sharded then says which.
	shardable bool
	known     bool
	sharded   bool

	mu sync.Mutex
	// subs are the subscriptions: classic ones (one per client, indexes in
	// classic) and sharded ones (one per slot in use, indexes in shards).
	subs     []*redis.PubSub
	classic  []int
	shards   map[int]int
	channels map[string]*channelWaiters
	closed   bool
	loopCtx  context.Context
	cancel   context.CancelFunc
	loops    sync.WaitGroup
}

// subscribed is one subscription's confirmation of one channel.
type subscribed struct {
	sub int
	ch  string
}

func newEvents(clients []redis.UniversalClient, clock Clock, window time.Duration, identity string, m *metrics) *events {
	_, cluster := clients[0].(*redis.ClusterClient)
	return &events{clients: clients, clock: clock, window: window, identity: identity, metrics: m, shardable: len(clients) == 1 && cluster,
		shards: map[int]int{}, channels: map[string]*channelWaiters{}}
}

// shardedPubSub says whether a new channel goes on sharded pub/sub
// (protocol.ShardedPubSub, asked until a probe answers; the scripts make
// the same choice on their own). Until then channels go on classic pub/sub:
// a missed message costs latency, never progress.
func (e *events) shardedPubSub(ctx context.Context) bool {
	if !e.shardable {
		return false
	}
	e.mu.Lock()
	known, sharded := e.known, e.sharded
	e.mu.Unlock()
	if known {
		return sharded
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shardProbeTimeout)
	defer cancel()
	sharded, err := protocol.ShardedPubSub(pctx, e.clients[0])
	if err != nil {
		return false
	}
	e.mu.Lock()
	e.known, e.sharded = true, sharded
	e.mu.Unlock()
	return sharded
}

// subscribe sends cw's subscriptions, one command per channel so that a
// refused waiter channel does not take the events channel with it;
// confirmed by the loop (a failure shows up there too); e.mu held.
func (e *events) subscribe(ctx context.Context, cw *channelWaiters) {
	if cw.sharded {
		cw.sub = e.shardSub(cw.names[0])
		for _, name := range cw.names {
			_ = e.subs[cw.sub].SSubscribe(ctx, name)
		}
		return
	}
	if e.classic == nil {
		for _, c := range e.clients {
			e.classic = append(e.classic, e.startSub(c.Subscribe(e.loopCtx)))
		}
	}
	for _, i := range e.classic {
		for _, name := range cw.names {
			_ = e.subs[i].Subscribe(ctx, name)
		}
	}
}

// unsubscribe ends cw's subscriptions to names (go-redis forgets them, so
// a reconnection does not subscribe them again); e.mu held.
func (e *events) unsubscribe(cw *channelWaiters, names ...string) {
	if cw.sharded {
		_ = e.subs[cw.sub].SUnsubscribe(context.Background(), names...)
		return
	}
	for _, i := range e.classic {
		_ = e.subs[i].Unsubscribe(context.Background(), names...)
	}
}

// refuseWaiterChannels drops the waiter channels after the server refused
// one (NOPERM): the keys' events channels remain, and a waiter whose events
// channel is confirmed no longer waits for its waiter channel's
// confirmation.
func (e *events) refuseWaiterChannels() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waiterChannelsRefused = true
	for ch, cw := range e.channels {
		if ch != cw.names[0] || len(cw.names) == 1 {
			continue
		}
		for _, name := range cw.names[1:] {
			delete(e.channels, name)
			for s := range cw.confirmedBy {
				if s.ch == name {
					delete(cw.confirmedBy, s)
				}
			}
		}
		e.unsubscribe(cw, cw.names[1:]...)
		cw.names = cw.names[:1]
		if !cw.confirmed && cw.everyNameConfirmed() {
			cw.confirmed = true
			close(cw.ready)
		}
	}
}

// startSub adds ps to the subscriptions and starts its loop; e.mu held.
func (e *events) startSub(ps *redis.PubSub) int {
	i := len(e.subs)
	e.subs = append(e.subs, ps)
	e.loops.Go(func() { e.loop(e.loopCtx, i, ps) })
	return i
}

// shardSub is the subscription of ch's slot, started empty when the slot
// has none: go-redis binds a sharded subscription to the node of the slot
// of its first channel, so channels of different slots cannot share one.
// e.mu held.
func (e *events) shardSub(ch string) int {
	slot := protocol.KeySlot(ch)
	if i, ok := e.shards[slot]; ok {
		return i
	}
	i := e.startSub(e.clients[0].(*redis.ClusterClient).SSubscribe(e.loopCtx))
	e.shards[slot] = i
	return i
}

// expire unsubscribes a channel that stayed without waiters.
func (e *events) expire(ch string, cw *channelWaiters) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.channels[ch] != cw || len(cw.queue) > 0 {
		return
	}
	for _, name := range cw.names {
		delete(e.channels, name)
	}
	e.unsubscribe(cw, cw.names...)
}

func (e *events) loop(ctx context.Context, sub int, ps *redis.PubSub) {
	for {
		msg, err := ps.ReceiveTimeout(ctx, time.Minute)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			if redis.HasErrorPrefix(err, "NOPERM") {
				// An ACL written for the events channels alone. Should it
				// refuse those too, waiting degrades as it would anyway.
				e.refuseWaiterChannels()
				continue
			}
			if e.shardable && redis.HasErrorPrefix(err, "MOVED") {
				// A subscription made while the slot map was stale.
				e.resubscribe(sub)
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = ps.Ping(ctx) // keeps an idle subscription's connection checked
				continue
			}
			// go-redis reconnects and resubscribes on the next receive.
			if !e.pause(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				e.confirm(sub, m.Channel)
			case "sunsubscribe":
				e.moved(sub, m.Channel)
			}
		case *redis.Message:
			kind, rest, _ := strings.Cut(m.Payload, " ")
			switch kind {
			case "released":
				e.released(m.Channel)
			case "granted":
				testHookGranted(rest)
				e.granted(m.Channel, rest)
			case "acquired":
				e.taken(m.Channel)
			default:
				continue
			}
			e.metrics.messages.WithLabelValues(kind).Inc()
		}
	}
}

// pause waits d on the Locker's clock; false when ctx ended first.
func (e *events) pause(ctx context.Context, d time.Duration) bool {
	fired := make(chan struct{})
	t := e.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-fired:
		return true
	}
}

// confirm handles a server's confirmation of a subscription to ch (sub is
// the subscription's index). A second confirmation from the same
// subscription means go-redis reconnected and subscribed again: a release
// may have been published while the connection was down, so the channel's
// oldest waiter is woken to look (one, not a herd).
func (e *events) confirm(sub int, ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[ch]
	if cw == nil {
		return
	}
	if cw.confirmedBy[subscribed{sub, ch}] {
		cw.releases++ // a waiter between attempt and registration retries too
		wakeOldest(cw)
		return
	}
	cw.confirmedBy[subscribed{sub, ch}] = true
	if !cw.confirmed && cw.everyNameConfirmed() {
		cw.confirmed = true
		close(cw.ready)
	}
}

// everyNameConfirmed: each of cw's channels was confirmed by some
// subscription (on Redlock, one node's is enough: any node's message
// counts).
func (cw *channelWaiters) everyNameConfirmed() bool {
	confirmed := map[string]bool{}
	for s := range cw.confirmedBy {
		confirmed[s.ch] = true
	}
	return len(confirmed) == len(cw.names)
}

// moved handles a sunsubscribe: ours after a channel expired (it is gone
// from channels then), or the server's when the slot of sub's channels
// moved to another node (resharding, failover). The channels still waited
// for are subscribed again on the slot's new owner (resubscribe).
func (e *events) moved(sub int, ch string) {
	e.mu.Lock()
	cw := e.channels[ch]
	ours := cw == nil || e.closed || !cw.sharded || cw.sub != sub
	e.mu.Unlock()
	if !ours {
		e.resubscribe(sub)
	}
}

// resubscribe replaces sharded subscription sub, whose slot moved: go-redis
// binds a subscription to one node, found from its slot map, so the map is
// reloaded first and, a moment later, sub's channels are subscribed on a
// new subscription and their oldest waiters look again (a release may have
// slipped by meanwhile).
func (e *events) resubscribe(sub int) {
	e.clients[0].(*redis.ClusterClient).ReloadState(e.loopCtx)
	e.clock.AfterFunc(protocol.SlotMapReload, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed || e.subs[sub] == nil {
			return
		}
		for slot, i := range e.shards {
			if i == sub {
				delete(e.shards, slot)
			}
		}
		for ch, cw := range e.channels {
			if !cw.sharded || cw.sub != sub || ch != cw.names[0] { // each key once
				continue
			}
			e.subscribe(e.loopCtx, cw)
			cw.releases++
			wakeOldest(cw)
		}
		_ = e.subs[sub].Close() // its loop ends
		e.subs[sub] = nil
	})
}

// close stops the subscription and its idle timers; Acquire calls see
// ErrClosed through the Locker.
func (e *events) close() {
	e.mu.Lock()
	e.closed = true
	subs, cancel := e.subs, e.cancel
	for _, cw := range e.channels {
		if cw.idle != nil {
			cw.idle.Stop()
		}
		e.stopWatch(cw)
	}
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	for _, ps := range subs {
		if ps != nil { // nil: replaced after its slot moved, and closed
			_ = ps.Close()
		}
	}
	e.loops.Wait()
}

package lock

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
)

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

// channelWaiters are the waiters for one key, under the key's events
// channel and, with a waiting line, this Locker's waiter channel of the key
// too (names; events.channels has the entry under both).
type channelWaiters struct {
	names []string
	// sharded: the channels are on sharded pub/sub, on subscription sub
	// (one key's channels share its slot).
	sharded bool
	sub     int
	ready   chan struct{} // closed when a server confirmed every name
	// confirmed: every name was confirmed by a subscription.
	confirmed bool
	// confirmedBy holds the subscriptions (by index in events.subs) that
	// confirmed each name: one confirming again has reconnected.
	confirmedBy map[subscribed]bool
	// releases counts "released" and "granted" messages seen, so a waiter
	// can tell whether one arrived between its failed attempt and its
	// registration.
	releases uint64
	queue    []*waiter
	// byDigest finds the waiter a "granted" message names; recentGrants
	// are the last digests granted, for a waiter registering just after
	// its own hand-off was announced.
	byDigest     map[string]*waiter
	recentGrants [8]string
	grants       int
	idle         Timer // unsubscribes after subscriptionLinger without waiters
	// unconfirmed fires when a key handed to another process's waiter
	// was followed by no other message within the hand-off window.
	unconfirmed Timer
}

// subscribed is one subscription's confirmation of one channel.
type subscribed struct {
	sub int
	ch  string
}

// waiter is one Acquire call waiting for a key.
type waiter struct {
	ch string
	// digest names the waiter's value in "granted" messages; "" when the
	// backend has no waiting line.
	digest string
	wake   chan struct{} // buffered 1: a pending wake is never lost
	// ready is closed once the subscription is confirmed: from then on no
	// release can slip by unnoticed.
	ready <-chan struct{}
	// retry says the caller must attempt again before sleeping on wake: its
	// subscription is new (a release may have come before it was in force),
	// or a release arrived since the caller's failed attempt.
	retry bool
	// holdsWake is set (by the waiting goroutine only) when it took a
	// wake-up that no attempt has used yet: if it gives up now, the
	// wake-up goes to the next waiter instead of being lost.
	holdsWake bool
}

// spent records that an attempt after the wake-up found the key taken by
// someone else: the release it announced has been used. w may be nil.
func (w *waiter) spent() {
	if w != nil {
		w.holdsWake = false
	}
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

// wait registers a waiter for key's channel, subscribing if needed. seen is
// what join returned before the caller's failed attempt; value is the
// waiter's claim, named by "granted" messages when line is true.
func (e *events) wait(ctx context.Context, key string, seen uint64, value string, line bool) (*waiter, error) {
	ch := protocol.EventsChannel(key)
	sharded := e.shardedPubSub(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.cancel == nil {
		e.loopCtx, e.cancel = context.WithCancel(context.Background())
	}
	cw := e.channels[ch]
	if cw == nil {
		cw = &channelWaiters{names: []string{ch}, sharded: sharded, ready: make(chan struct{}),
			confirmedBy: map[subscribed]bool{}, byDigest: map[string]*waiter{}}
		if line && !e.waiterChannelsRefused {
			cw.names = append(cw.names, protocol.WaiterChannel(key, e.identity))
		}
		for _, name := range cw.names {
			e.channels[name] = cw
		}
		e.subscribe(ctx, cw)
	}
	if cw.idle != nil {
		cw.idle.Stop()
		cw.idle = nil
	}
	w := &waiter{ch: ch, wake: make(chan struct{}, 1), ready: cw.ready}
	cw.queue = append(cw.queue, w)
	if line {
		// Only a hand-off to this waiter matters: its failed attempt
		// queued it in Redis already.
		w.digest = protocol.ValueDigest(value)
		cw.byDigest[w.digest] = w
		w.retry = !cw.confirmed || slices.Contains(cw.recentGrants[:], w.digest)
	} else {
		w.retry = !cw.confirmed || cw.releases != seen
	}
	return w, nil
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

// rename gives w (nil: no waiter yet) the name of its new value.
func (e *events) rename(w *waiter, value string) {
	if w == nil || w.digest == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[w.ch]; cw != nil {
		delete(cw.byDigest, w.digest)
		w.digest = protocol.ValueDigest(value)
		cw.byDigest[w.digest] = w
	}
}

// join queues a new Acquire behind this Locker's waiters for key, when
// queueLocally is set (a backend without a Redis-side line) and there are
// any on a confirmed subscription, so that a goroutine that just released
// (or just arrived) does not barge ahead of goroutines already woken or
// waiting: within a Locker, waiters take the lock in arrival order. (With a
// line, the line keeps that order across processes.) Otherwise it returns
// nil and the number of messages seen so far, for wait to tell whether one
// slipped by.
func (e *events) join(key string, queueLocally bool) (*waiter, uint64) {
	ch := protocol.EventsChannel(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[ch]
	if e.closed || cw == nil {
		return nil, 0
	}
	if !queueLocally || !cw.confirmed || len(cw.queue) == 0 {
		return nil, cw.releases
	}
	w := &waiter{ch: ch, wake: make(chan struct{}, 1), ready: cw.ready}
	cw.queue = append(cw.queue, w)
	return w, 0
}

// done unregisters w. A wake-up that w received but did not use — still
// pending, or taken by a caller that gives up (failed) before an attempt
// used it — passes to the next waiter. The channel stays subscribed for
// subscriptionLinger.
func (e *events) done(w *waiter, failed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[w.ch]
	if cw == nil {
		return
	}
	for i, q := range cw.queue {
		if q == w {
			cw.queue = append(cw.queue[:i], cw.queue[i+1:]...)
			break
		}
	}
	if w.digest != "" && cw.byDigest[w.digest] == w {
		delete(cw.byDigest, w.digest)
	}
	select {
	case <-w.wake:
		wakeOldest(cw)
	default:
		if failed && w.holdsWake {
			wakeOldest(cw)
		}
	}
	if len(cw.queue) == 0 && !e.closed && cw.idle == nil {
		cw.idle = e.clock.AfterFunc(subscriptionLinger, func() { e.expire(w.ch, cw) })
	}
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

func wakeOldest(cw *channelWaiters) {
	for _, w := range cw.queue {
		if len(w.wake) == 0 { // one with a pending wake passes this one on
			wake(w)
			return
		}
	}
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

func (e *events) released(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil {
		cw.releases++
		e.stopWatch(cw)
		wakeOldest(cw)
	}
}

// granted handles "granted <digest> [<next>]": it wakes the waiter the
// hand-off chose, when it is in this process. The waiter named next is now
// first in line: when it is here, and nothing follows within the hand-off
// window (the chosen waiter may have died with the key), it looks again.
// Waiters elsewhere in the line need do nothing.
func (e *events) granted(ch, payload string) {
	digest, next, _ := strings.Cut(payload, " ")
	e.mu.Lock()
	defer e.mu.Unlock()
	cw := e.channels[ch]
	if cw == nil {
		return
	}
	cw.releases++
	cw.recentGrants[cw.grants%len(cw.recentGrants)] = digest
	cw.grants++
	e.stopWatch(cw)
	if w := cw.byDigest[digest]; w != nil {
		wake(w)
	}
	if w := cw.byDigest[next]; w != nil && next != "" && !e.closed {
		d := e.window + backoff.Jitter(e.window/4)
		cw.unconfirmed = e.clock.AfterFunc(d, func() { e.recheck(cw, w) })
	}
}

// wake gives w a wake-up unless it has one pending.
func wake(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// taken notes that a key was taken ("acquired", with WithHolderMessages):
// a hand-off was confirmed, so there is nothing to recheck.
func (e *events) taken(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil {
		e.stopWatch(cw)
	}
}

// recheck wakes w, first in line, after a hand-off nobody followed up.
func (e *events) recheck(cw *channelWaiters, w *waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw.byDigest[w.digest] == w {
		wake(w)
	}
}

func (e *events) stopWatch(cw *channelWaiters) {
	if cw.unconfirmed != nil {
		cw.unconfirmed.Stop()
		cw.unconfirmed = nil
	}
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

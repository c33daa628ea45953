package lock

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// events is a Locker's one shared subscription (one per node for Redlock,
// where any node's message counts). Waiters for a key register here; each "released" message on the key's channel wakes the oldest local
// waiter (FIFO), so a release does not stampede every goroutine of the
// process at Redis. Messages are hints: a waiter also sleeps until the
// holder's TTL runs out, so a lost message costs latency, never progress.
type events struct {
	clients []redis.UniversalClient

	mu       sync.Mutex
	subs     []*redis.PubSub // one per client, created with the first waiter
	channels map[string]*channelWaiters
	closed   bool
	cancel   context.CancelFunc
	loops    sync.WaitGroup
}

type channelWaiters struct {
	ready     chan struct{} // closed when the server confirmed the subscription
	confirmed bool
	queue     []*waiter
}

// waiter is one Acquire call waiting for a key.
type waiter struct {
	ch   string
	wake chan struct{} // buffered 1: a pending wake is never lost
	// ready is closed once the subscription is confirmed; after that no
	// release can slip by unnoticed.
	ready <-chan struct{}
}

func newEvents(clients []redis.UniversalClient) *events {
	return &events{clients: clients, channels: map[string]*channelWaiters{}}
}

// wait registers a waiter for key's channel, subscribing if it is the first.
func (e *events) wait(ctx context.Context, key string) (*waiter, error) {
	ch := EventsChannel(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.subs == nil {
		loopCtx, cancel := context.WithCancel(context.Background())
		e.cancel = cancel
		for _, c := range e.clients {
			ps := c.Subscribe(loopCtx)
			e.subs = append(e.subs, ps)
			e.loops.Go(func() { e.loop(loopCtx, ps) })
		}
	}
	cw := e.channels[ch]
	if cw == nil {
		cw = &channelWaiters{ready: make(chan struct{})}
		e.channels[ch] = cw
		// Sent now, confirmed by the loop; a failure shows up there too.
		for _, ps := range e.subs {
			_ = ps.Subscribe(ctx, ch)
		}
	}
	w := &waiter{ch: ch, wake: make(chan struct{}, 1), ready: cw.ready}
	cw.queue = append(cw.queue, w)
	return w, nil
}

// done unregisters w, unsubscribing when it was the channel's last waiter.
// A wake that w received but did not use passes to the next waiter.
func (e *events) done(w *waiter) {
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
	select {
	case <-w.wake:
		wakeOldest(cw)
	default:
	}
	if len(cw.queue) == 0 {
		delete(e.channels, w.ch)
		if !e.closed {
			for _, ps := range e.subs {
				_ = ps.Unsubscribe(context.Background(), w.ch)
			}
		}
	}
}

func wakeOldest(cw *channelWaiters) {
	for _, w := range cw.queue {
		select {
		case w.wake <- struct{}{}:
			return
		default: // already has a pending wake: give this one to the next
		}
	}
}

func (e *events) loop(ctx context.Context, ps *redis.PubSub) {
	for {
		msg, err := ps.ReceiveTimeout(ctx, time.Minute)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = ps.Ping(ctx) // keeps an idle subscription's connection checked
				continue
			}
			// go-redis reconnects and resubscribes on the next receive.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				e.confirm(m.Channel)
			}
		case *redis.Message:
			if strings.HasPrefix(m.Payload, "released") {
				e.released(m.Channel)
			}
		}
	}
}

func (e *events) confirm(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil && !cw.confirmed {
		cw.confirmed = true
		close(cw.ready)
	}
}

func (e *events) released(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cw := e.channels[ch]; cw != nil {
		wakeOldest(cw)
	}
}

// close stops the subscription and wakes nobody: Acquire calls see ErrClosed
// through the Locker.
func (e *events) close() {
	e.mu.Lock()
	e.closed = true
	subs, cancel := e.subs, e.cancel
	e.mu.Unlock()
	if subs == nil {
		return
	}
	cancel()
	for _, ps := range subs {
		_ = ps.Close()
	}
	e.loops.Wait()
}

package election

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/backoff"
	"github.com/redlease/redlease/internal/protocol"
)

// observer follows who holds the key, for OnNewLeader (the candidate's own
// wait is lock.Mutex.Acquire's). It never polls at a fixed interval. What it learns from:
//
//   - "acquired <identity>" on the key's events channel: a new leader;
//   - "released": the key is free;
//   - a GET (with PTTL, atomically) whenever the subscription is confirmed
//     (at start and after every reconnect, when messages may have been
//     missed) and whenever the holder's PTTL runs out: the key is then free
//     (a crashed leader never says "released"), or held by someone whose
//     "acquired" was missed, or by the same leader, renewed.
type observer struct {
	e      *elector
	log    logr.Logger
	leader string // last identity reported; "" when none or the key was seen free
	expiry *time.Timer
	retry  backoff.Exponential // of failed GETs
}

func newObserver(e *elector) *observer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &observer{e: e, log: e.log.WithName("observer"), expiry: t, retry: backoff.Exponential{Min: minBackoff, Max: maxBackoff}}
}

func (o *observer) run(ctx context.Context) {
	defer o.expiry.Stop()
	// On Redis Cluster the key's messages are on sharded pub/sub where the
	// servers have it (docs/protocol.md, Messages).
	sharded, again := o.shardedPubSub(ctx)
	for again {
		again = o.watch(ctx, sharded) // true: the slot moved, subscribe again
	}
}

// shardedPubSub asks whether the key's channel is on sharded pub/sub
// until a probe answers, backing off as failed GETs do (the servers do not
// answer then either); false ok when ctx ended first.
func (o *observer) shardedPubSub(ctx context.Context) (sharded, ok bool) {
	for {
		sharded, err := protocol.ShardedPubSub(ctx, o.e.cfg.Client)
		if err == nil {
			o.retry.Reset()
			return sharded, true
		}
		o.log.V(1).Info("asking whether the servers have sharded pub/sub", "error", err.Error())
		select {
		case <-ctx.Done():
			return false, false
		case <-time.After(o.retry.Next()):
		}
	}
}

// watch follows the key's channel until ctx ends (false), or until the
// server unsubscribes a sharded subscription because the key's slot moved
// (true: the caller subscribes again, on the slot's new owner once the
// client reloaded its slot map).
func (o *observer) watch(ctx context.Context, sharded bool) bool {
	ch := protocol.EventsChannel(o.e.cfg.Key)
	var ps *redis.PubSub
	if sharded {
		ps = o.e.cfg.Client.(*redis.ClusterClient).SSubscribe(ctx, ch)
	} else {
		ps = o.e.cfg.Client.Subscribe(ctx, ch)
	}
	// go-redis's goroutine behind this channel reconnects, resubscribes
	// (delivering a new *redis.Subscription) and pings an idle connection;
	// it closes the channel once the PubSub is closed.
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(64))
	defer func() {
		_ = ps.Close()
		for range msgs { // until go-redis's goroutine has stopped
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return false
		case m, ok := <-msgs:
			if !ok {
				return false
			}
			switch m := m.(type) {
			case *redis.Subscription:
				switch m.Kind {
				case "subscribe", "ssubscribe":
					o.refresh(ctx, true)
				case "sunsubscribe": // the slot moved
					o.e.cfg.Client.(*redis.ClusterClient).ReloadState(ctx)
					select {
					case <-ctx.Done():
						return false
					case <-time.After(protocol.SlotMapReload):
						return true
					}
				}
			case *redis.Message:
				o.message(ctx, m.Payload)
			}
		case <-o.expiry.C:
			o.refresh(ctx, true)
		}
	}
}

func (o *observer) message(ctx context.Context, payload string) {
	switch {
	case strings.HasPrefix(payload, "acquired "):
		o.report(strings.TrimPrefix(payload, "acquired "))
		// Only for the holder's PTTL: the messages that follow are more
		// recent than what a GET would say now about who holds the key.
		o.refresh(ctx, false)
	case payload == "released":
		o.free()
	}
	// "granted <digest>" (a release handed the key to a waiting candidate)
	// needs nothing: the candidate's confirmation says "acquired", and a
	// candidate that died with the key lets it expire, which the expiry
	// timer sees.
}

// refresh reads the holder and its PTTL in one transaction and arms the
// expiry timer. With authoritative, a holder other than the one last
// reported is reported, and a free key resets the leader; without it,
// only the timer is armed.
func (o *observer) refresh(ctx context.Context, authoritative bool) {
	key := o.e.cfg.Key
	var (
		get  *redis.StringCmd
		pttl *redis.DurationCmd
	)
	_, err := o.e.cfg.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		if ctx.Err() == nil {
			wait := o.retry.Next()
			o.log.Info("reading the holder failed; retrying", "error", err.Error(), "retryIn", wait)
			o.expiry.Reset(wait)
		}
		return
	}
	o.retry.Reset()
	value, err := get.Result()
	if errors.Is(err, redis.Nil) {
		o.expiry.Stop()
		if authoritative {
			o.leader = ""
		}
		return
	}
	if authoritative {
		if id := protocol.IdentityFromValue(value); id != "" {
			o.report(id)
		} else {
			o.leader = "" // not written by this library: nobody to report
		}
	}
	switch d := pttl.Val(); {
	case d >= 0:
		// Redis deletes an expired key when it is next read: a GET just
		// after the PTTL sees it gone (or renewed, or someone else's).
		o.expiry.Reset(d + backoff.Jitter(minBackoff))
	default:
		// -1: no TTL (not a lease of this library); only messages move on.
		o.expiry.Stop()
	}
}

// free records that the key is free.
func (o *observer) free() {
	o.leader = ""
	o.expiry.Stop()
}

// report calls OnNewLeader when identity is not the leader last reported.
func (o *observer) report(identity string) {
	if identity == "" || identity == o.leader {
		return
	}
	o.leader = identity
	o.log.V(1).Info("new leader observed", "leader", identity)
	if f := o.e.cfg.Callbacks.OnNewLeader; f != nil {
		f(identity)
	}
}

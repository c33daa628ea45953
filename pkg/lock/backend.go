package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// backend is one topology's half of the protocol: a single Redis (standalone,
// failover or cluster client) or a Redlock set of independent nodes.
type backend interface {
	acquire(ctx context.Context, t target, c claim) (attempt, error)
	// renew extends value's hold on t if it is still ours; false when it is not.
	renew(ctx context.Context, t target, value string, ttl time.Duration) (bool, error)
	// release ends value's hold on t if it is still ours; false when it was not.
	release(ctx context.Context, t target, value string, arg any) (bool, error)
	// subscribers are the clients whose pub/sub carries the keys' events.
	subscribers() []redis.UniversalClient
	// inspect reads the key's holder, TTL and fence counter.
	inspect(ctx context.Context, key string) (Holding, error)
	// close waits (bounded by ctx) for requests still in flight.
	close(ctx context.Context)
	// waitingLine reports whether failed attempts queue in a Redis-side
	// waiting line whose releases hand the key to its head (protocol 2).
	waitingLine() bool
	// leave gives up value's claim on t in the background: its place in
	// the line, and the key (or permit) if it was handed to value.
	leave(t target, value string)
	// countsHandOffs reports whether a waiter may count its lease from a
	// counted hand-off (protocol 4) without confirming first: not under
	// WithReplicaAck, where a lease counts only once replicas acknowledged
	// a write of its own.
	countsHandOffs() bool
}

// target is what a claim or a lease is on: a lock key, held exclusively
// or shared, or one permit of a semaphore key that permits holders may
// hold at once.
type target struct {
	key string
	// permits is 0 for a lock, else the semaphore's number of permits as
	// this caller sees it.
	permits int
	// shared is a shared hold of a lock key (AcquireShared).
	shared bool
}

func (t target) semaphore() bool { return t.permits > 0 }

// claim is one acquisition attempt.
type claim struct {
	value string
	// valueArg is value in an interface, made once: it goes on the
	// acquisition and on the lease's release (protocol.AcquireArgs.ValueArg).
	valueArg any
	ttl      time.Duration
	// place, when positive, queues a failed attempt in the key's waiting
	// line for that long (backends with a waiting line).
	place time.Duration
	// queued says value may have a place in the line (and may have been
	// handed the key).
	queued bool
	// lineKept is when (on the Locker's clock, before sending) value's
	// last attempt that kept the line Place longer was made; lineFresh
	// says this attempt need not keep it again (protocol 7: less than half
	// a TTL since lineKept, with a Place of two TTLs and a hand-off window,
	// so a waiter trying at least every TTL keeps the line with half a TTL
	// and a window to spare).
	lineKept  time.Time
	lineFresh bool
}

// lineFreshAt says whether an attempt with c made at now, by a Locker
// with this ttl, need not keep the line longer (claim.lineFresh).
func (c claim) lineFreshAt(now time.Time, ttl time.Duration) bool {
	return c.queued && now.Sub(c.lineKept) < ttl/2
}

// attempt is the server's answer to one acquisition attempt.
type attempt struct {
	acquired  bool
	fence     uint64        // when acquired
	holderTTL time.Duration // when not acquired: the holder's PTTL
	// counter is, when not acquired, the key's hand-off counter as the
	// attempt saw it (protocol 4); -1 when unknown. history is the
	// counter's history (protocol 6, protocol.Attempt); "" when unknown.
	counter int64
	history string
	// recordedTTL is, when not acquired under the failover quarantine, the
	// longest TTL the key's epoch record holds (0: unknown).
	recordedTTL time.Duration
	// quarantine is, when not acquired, how long a failover quarantine
	// still holds grants back (0: none).
	quarantine time.Duration
	// notRun is, with an error, that the attempt provably wrote nothing
	// (protocol.NotRun: never sent, or refused by a loading or failing-over
	// server): its value and place are still good.
	notRun bool
}

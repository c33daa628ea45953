package protocol

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The scripts are the Redis half of the protocol, run as the functions of
// one library (functions.go) or with EVALSHA/EVAL. Redis scripts cannot
// call one another, so the pieces two scripts share (the fence, the waiting
// line, finishing an acquisition) are Lua functions prepended to each run
// with EVALSHA (one definition, two scripts), and defined once, at load, in
// the library (pieces).
var (
	//go:embed lua/fence.lua
	fenceSrc string
	//go:embed lua/line.lua
	lineSrc string
	//go:embed lua/taken.lua
	takenSrc string
	//go:embed lua/value.lua
	valueSrc string
	//go:embed lua/epoch.lua
	epochSrc string
	//go:embed lua/shared.lua
	sharedSrc string

	//go:embed lua/acquire.lua
	acquireSrc string
	// AcquireScript: KEYS AcquireKeys; ARGV AcquireArgs.argv. Replies {1,
	// fence} when acquired, {0, pttl, counter, quarantine, history} when
	// not (ParseAttempt reads both), or an error with the lock key not
	// taken.
	AcquireScript = sentOnly(newFastScript("acquire", acquireFastSrc, acquireSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, takenSrc, valueSrc))
	//go:embed lua/acquire_fast.lua
	acquireFastSrc string

	//go:embed lua/release.lua
	releaseSrc    string
	releaseScript = newFastScript("release", releaseFastSrc, releaseSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, valueSrc)
	//go:embed lua/release_fast.lua
	releaseFastSrc string

	//go:embed lua/renew.lua
	renewSrc string
	// RenewScript: KEYS RenewKeys; ARGV RenewArgv. Replies 1 when
	// extended, 0 when the key was no longer ours.
	RenewScript = newScript("renew", false, renewSrc, epochSrc, valueSrc)

	//go:embed lua/raise_fence.lua
	raiseFenceSrc    string
	raiseFenceScript = newScript("raise_fence", false, raiseFenceSrc)

	// The semaphore's scripts (protocol 3) share the line's functions and
	// those of the holder set, lua/permits.lua.
	//go:embed lua/permits.lua
	permitsSrc string

	//go:embed lua/permit_acquire.lua
	permitAcquireSrc string
	// AcquirePermitScript: KEYS AcquirePermitKeys; ARGV
	// AcquireArgs.PermitArgv. Replies {1, fence} when acquired, {0, ms,
	// counter, quarantine, history} when not (ms until a permit frees by
	// expiry alone; the rest as for AcquireScript), or an error with no
	// permit taken.
	AcquirePermitScript = sentOnly(newScript("permit_acquire", false, permitAcquireSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc, takenSrc))

	//go:embed lua/permit_release.lua
	permitReleaseSrc    string
	releasePermitScript = newScript("permit_release", false, permitReleaseSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc)

	//go:embed lua/permit_renew.lua
	permitRenewSrc string
	// RenewPermitScript: KEYS RenewPermitKeys; ARGV RenewArgv. Replies 1
	// when extended, 0 when the value no longer held a permit.
	RenewPermitScript = newScript("permit_renew", false, permitRenewSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc)

	//go:embed lua/read.lua
	readSrc string
	// readScript reads a lock's or a semaphore's key, bounded (ReadKeys).
	readScript = newScript("read", true, readSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc)

	//go:embed lua/fence_write.lua
	fenceWriteSrc string
	// FenceWriteScript is pkg/fence's fenced write: KEYS resource hash;
	// ARGV token (canonical decimal), value. Replies {"1", token} when
	// accepted, {"0", current} when stale.
	FenceWriteScript = newScript("fence_write", false, fenceWriteSrc)

	//go:embed lua/election_record.lua
	electionRecordSrc string
	// ElectionRecordScript is pkg/election's compare-and-set of a leader
	// election record: KEYS record key; ARGV the record last seen, the new
	// record, the TTL (ms). Replies 1 when written, 0 when the key is
	// gone, -1 on a conflict.
	ElectionRecordScript = newScript("election_record", false, electionRecordSrc)
)

// pieces are the Lua functions the scripts share, each after those it
// calls: the library defines them in this order, once (Library), and a
// script run with EVALSHA prepends those it uses, in the same order.
var pieces = []string{fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc, takenSrc, valueSrc}

// scripts are every script of the protocol, in the order the library
// registers them.
var scripts = []*Script{AcquireScript, releaseScript, RenewScript, raiseFenceScript, AcquirePermitScript,
	releasePermitScript, RenewPermitScript, readScript, FenceWriteScript, ElectionRecordScript, epochReadScript,
	revokeScript, forceScript, acquireAllScript, releaseAllScript, AcquireSharedScript, releaseSharedScript, RenewSharedScript, upgradeSharedScript}

// HandoffWindow bounds how long a released key waits for the waiter it was
// handed to (at most the lock's TTL): a waiter that died at the head of the
// line costs the others this long. It is also the expiry a hand-off sets,
// from which a waiter counts its lease (protocol 4): a waiter whose last
// attempt before the hand-off is older than the window confirms first.
const HandoffWindow = time.Second

// acquireSuffixes derive KEYS[2] on of AcquireScript from the lock key.
var acquireSuffixes = []string{fenceSuffix, eventsSuffix, lineSuffix, epochSuffix}

// AcquireKeys are the KEYS of AcquireScript for lock key.
func AcquireKeys(key string) []string { return scriptKeys(key, acquireSuffixes...) }

// AcquireCall is the call of AcquireScript for lock key that a Locker
// makes: AcquireKeys and Argv, less the trailing ones the script reads as
// absent when they hold their defaults (lua/acquire.lua says which). Every
// argument costs redis-server about 0.07 µs of the call and the client an
// interface and its bytes: an uncontended TryAcquire sends 2 keys and 3
// arguments instead of 5 and 14 (docs/benchmarks.md).
func AcquireCall(key string, a AcquireArgs) Call {
	nkeys, nargs := 2, 3 // the key and its counter; value, TTL and fencing
	if a.Announce {
		nkeys, nargs = 3, 5 // the events channel; the identity announced
	}
	if a.Place > 0 || a.Queued || a.FIFO {
		nkeys, nargs = 4, 6 // the line; through Place
	}
	if a.Queued {
		nargs = 7
	}
	if a.FIFO {
		nargs = 9 // through Window, which only a FIFO acquire reads
	}
	if a.Sharded {
		nargs = 10
	}
	if a.Quarantine.On {
		nkeys, nargs = 5, 12 // the epoch record; the cutoff
	}
	if a.LineFresh && a.Queued {
		nargs = 13 // the "0" that spares the line's PEXPIRE
	}
	if a.Tickets && nkeys >= 4 {
		nargs = 14 // ticket order, read only by an attempt that may join the line
	}
	if !a.FIFO {
		a.Window = 0 // read by FIFO only: boxed as 0, it costs no allocation
	}
	return Call{AcquireScript, scriptKeys(key, acquireSuffixes[:nkeys-1]...), a.Argv()[:nargs]}
}

// RenewKeys are the KEYS of RenewScript for lock key.
func RenewKeys(key string) []string { return scriptKeys(key, epochSuffix) }

// RenewArgv is the ARGV of RenewScript: value's lease extended to ttl,
// under q.
func RenewArgv(value string, ttl time.Duration, q Quarantine) []any {
	return q.appendArgv(append(make([]any, 0, 2+quarantineArgc), value, Millis(ttl)))
}

// RenewCall is the call of RenewScript that a Locker makes: RenewKeys and
// RenewArgv, less the epoch record and the quarantine's arguments without
// a quarantine (the script reads them as absent, as AcquireCall's does).
func RenewCall(key, value string, ttl time.Duration, q Quarantine) Call {
	return q.trim(Call{RenewScript, RenewKeys(key), RenewArgv(value, ttl, q)})
}

// RenewPermitCall is RenewCall for a semaphore's permit.
func RenewPermitCall(key, value string, ttl time.Duration, q Quarantine) Call {
	return q.trim(Call{RenewPermitScript, RenewPermitKeys(key), RenewArgv(value, ttl, q)})
}

// AcquireArgs are one acquisition attempt's arguments.
type AcquireArgs struct {
	Value    string
	TTL      time.Duration
	Fencing  bool
	Identity string
	// Announce publishes "acquired <identity>" (pkg/election's observers
	// listen for it).
	Announce bool
	// Place, when positive, queues a failed attempt in the key's waiting
	// line (or keeps its place), and keeps the line that long; a waiter
	// keeps its place by trying again within it.
	Place time.Duration
	// Queued says Value may be in the line already: the key may have been
	// handed to it, and taking the key must leave the line.
	Queued bool
	// FIFO gives a free key to the head of the line rather than to the
	// caller; Window is then how long it waits for the head (see
	// HandoffWindow).
	FIFO   bool
	Window time.Duration
	// Permits is the number of permits of a semaphore (PermitArgv only):
	// the attempt takes one only while fewer are held.
	Permits int
	// Sharded publishes the key's messages on sharded pub/sub (SPUBLISH,
	// falling back to PUBLISH where the server does not know it): for
	// callers on Redis Cluster, whose waiters subscribe with SSUBSCRIBE.
	Sharded bool
	// Quarantine holds grants back after a failover.
	Quarantine Quarantine
	// Constants, when set, hold the TTL, window, place and identity boxed
	// once (NewConstants); nil boxes them at every call.
	Constants *Constants
	// ValueArg, when set, is Value in an interface, made once for a claim:
	// a value goes on its acquisition and its release, and a string made
	// at run time is copied to the heap each time it goes into one. Nil
	// puts Value in one at every call.
	ValueArg any
	// LineFresh says the caller, queued, kept the line long enough lately
	// (protocol 7): its last attempt that kept the line was sent less than
	// half a TTL ago, on the caller's clock, and the line is kept for a
	// Place of two TTLs and a hand-off window. An attempt that only keeps
	// its place then leaves the line's expiry as it is. False (the zero
	// value, and what a protocol-6 client's missing argument reads as)
	// keeps the line Place longer on every attempt.
	LineFresh bool
	// Tickets orders the key's line by ticket (protocol 7): a waiter's
	// arrival is the next value of the key's counter rather than the
	// server's clock (lua/line.lua's line_tickets). False (the zero value,
	// and what a missing argument reads as) orders it by the clock.
	Tickets bool
}

// Argv is the ARGV of AcquireScript.
func (a AcquireArgs) Argv() []any {
	return append(a.Quarantine.appendArgv(append(a.common(1), flag(a.Sharded))), flag(!a.LineFresh), flag(a.Tickets))
}

// PermitArgv is the ARGV of AcquirePermitScript: Argv's with Permits
// before Sharded.
func (a AcquireArgs) PermitArgv() []any {
	return append(a.Quarantine.appendArgv(append(a.common(2), a.Permits, flag(a.Sharded))), flag(!a.LineFresh), flag(a.Tickets))
}

// common is the arguments Argv and PermitArgv share, in a slice with room
// for the extra arguments each appends, the quarantine's and the line's
// two flags: one allocation per attempt.
func (a AcquireArgs) common(extra int) []any {
	const n = 9
	k := a.Constants
	return append(make([]any, 0, n+extra+quarantineArgc+2), valueArg(a.Value, a.ValueArg), k.millis(a.TTL), flag(a.Fencing), k.str(a.Identity), flag(a.Announce),
		k.millis(a.Place), flag(a.Queued), flag(a.FIFO), k.millis(a.Window))
}

// valueArg is value in an interface: arg when the caller made it once.
func valueArg(value string, arg any) any {
	if arg != nil {
		return arg
	}
	return value
}

// flag is a script's "1" or "0" argument, boxed once: a string chosen at
// run time is copied to the heap each time it goes into an interface, and
// an acquire passes five flags and a release two: 7 of the 52 allocations
// an uncontended acquire+release made before.
func flag(b bool) any {
	if b {
		return flagOn
	}
	return flagOff
}

var flagOn, flagOff any = "1", "0"

// Millis rounds d up to whole milliseconds, so a sub-millisecond remainder
// never becomes PX 0.
func Millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// ReleaseArgs are a release's arguments besides the key and value.
type ReleaseArgs struct {
	// Window is how long the waiter handed the key has to confirm it.
	Window time.Duration
	// Announce says "released" when nobody waits.
	Announce bool
	// Sharded is AcquireArgs.Sharded.
	Sharded bool
	// TTL is the lock's, and Quarantine its failover quarantine: a
	// release during a quarantine hands the key to nobody.
	TTL        time.Duration
	Quarantine Quarantine
	// Constants is AcquireArgs.Constants.
	Constants *Constants
	// ValueArg is AcquireArgs.ValueArg: the released value in an
	// interface, nil to make one.
	ValueArg any
}

// Release deletes key if it still holds value and hands it to the first
// waiter in line (who has a.Window to confirm), or, when nobody waits or
// a failover quarantine holds grants back, deletes it (and with
// a.Announce says "released"); a value that does not hold the key leaves
// the line. False when the key was not ours.
func Release(ctx context.Context, r Runner, key, value string, a ReleaseArgs) (bool, error) {
	n, err := r.Run(ctx, releaseCall(key, value, a)).Int64()
	if err != nil {
		return false, fmt.Errorf("release %q: %w", key, err)
	}
	return n == 1, nil
}

// releaseCall is Release's call, less the trailing KEYS and ARGV
// lua/release.lua reads as absent when they hold their defaults (as
// AcquireCall): the epoch record and the TTL without a quarantine, the
// flags when off. A release always names the line, and the events
// channel and the counter a hand-off needs.
func releaseCall(key, value string, a ReleaseArgs) Call {
	nkeys, nargs := 4, 2 // through the counter; the value and the window
	if a.Announce {
		nargs = 3
	}
	if a.Sharded {
		nargs = 4
	}
	if a.Quarantine.On {
		nkeys, nargs = 5, 7 // the epoch record; the TTL and the cutoff
	} else {
		a.TTL = 0 // left out: boxed as 0, it costs no allocation
	}
	return Call{releaseScript, scriptKeys(key, releaseSuffixes[:nkeys-1]...), releaseArgv(value, a)[:nargs]}
}

// releaseSuffixes derive KEYS[2] on of the release script from the lock key.
var releaseSuffixes = []string{eventsSuffix, lineSuffix, fenceSuffix, epochSuffix}

// releaseArgv is every ARGV of the release script, none left out.
func releaseArgv(value string, a ReleaseArgs) []any {
	k := a.Constants
	return a.Quarantine.appendArgv(append(make([]any, 0, 5+quarantineArgc), valueArg(value, a.ValueArg), k.millis(a.Window), flag(a.Announce), flag(a.Sharded), k.millis(a.TTL)))
}

// ErrFenceRange reports a fence above MaxFence, which Lua could not hold
// exactly.
var ErrFenceRange = errors.New("fence above 2^53-1, the largest exact Lua number")

// RaiseFence sets key's fence counter to at least fence and reports whether
// it was raised. It never lowers a counter. Redlock's write-back and the
// controller's fence floor use it.
func RaiseFence(ctx context.Context, r Runner, key string, fence uint64) (bool, error) {
	if fence > MaxFence {
		return false, fmt.Errorf("raising the fence of %q to %d: %w", key, fence, ErrFenceRange)
	}
	n, err := r.Run(ctx, Call{raiseFenceScript, []string{FenceKey(key)}, []any{strconv.FormatUint(fence, 10)}}).Int()
	if err != nil {
		return false, fmt.Errorf("raising the fence of %q: %w", key, err)
	}
	return n == 1, nil
}

// AcquirePermitKeys are the KEYS of AcquirePermitScript for semaphore key.
func AcquirePermitKeys(key string) []string {
	return scriptKeys(key, fenceSuffix, eventsSuffix, permitLineSuffix, holdersSuffix, epochSuffix)
}

// RenewPermitKeys are the KEYS of RenewPermitScript for semaphore key.
func RenewPermitKeys(key string) []string { return scriptKeys(key, holdersSuffix, epochSuffix) }

// ReleasePermit removes value's permit of the semaphore key, if it holds
// one, and hands the permits that leaves free (of permits) to the first
// waiters in line (each has a.Window to confirm) unless a failover
// quarantine holds grants back; when it hands none and a.Announce is set
// it says "released". A value holding no permit leaves the line. False
// when value held no permit.
func ReleasePermit(ctx context.Context, r Runner, key, value string, permits int, a ReleaseArgs) (bool, error) {
	keys := scriptKeys(key, eventsSuffix, permitLineSuffix, holdersSuffix, fenceSuffix, epochSuffix)
	args := a.Quarantine.appendArgv(append(make([]any, 0, 6+quarantineArgc), value, Millis(a.Window), flag(a.Announce), permits, flag(a.Sharded), Millis(a.TTL)))
	n, err := r.Run(ctx, Call{releasePermitScript, keys, args}).Int64()
	if err != nil {
		return false, fmt.Errorf("release a permit of %q: %w", key, err)
	}
	return n == 1, nil
}

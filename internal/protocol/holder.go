package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Holder is what one server says about a lock, without its value.
type Holder struct {
	// Held is true when the lock key exists.
	Held bool
	// Identity is the holder's identity from the lock value; "" when the
	// key is free, held shared, or holds a value this library did not
	// write.
	Identity string
	// Shared is how many hold the key shared (protocol 7: expired holds
	// no script has removed yet included); 0 for a free key or an
	// exclusive holder. TTL is then the last shared hold's.
	Shared int
	// TTL is the key's remaining time to live when held (negative: no TTL).
	TTL time.Duration
	// FenceSet is true when the fence counter exists; Fence is its value.
	FenceSet bool
	Fence    uint64
	// QuarantineLeft is how long a failover quarantine recorded on the key
	// still holds grants back (0: none). A change of server that no script
	// has run into yet is not recorded, so not seen here.
	QuarantineLeft time.Duration
	// Line is the key's waiting line; nil when the server did not report
	// it (the library's function of an older build, an ACL without ZCARD).
	Line *Line
}

// ReadHolder reads the lock key, its PTTL and its fence counter in one
// round trip. The value is reduced to its identity here and goes no further:
// errors carry the server's reply (WRONGTYPE...), never the value. A
// semaphore's key is a WRONGTYPE error (ReadPermits reads those).
func ReadHolder(ctx context.Context, r Runner, key string) (Holder, error) {
	return ReadHolderWaiters(ctx, r, key, 0)
}

// ReadHolderWaiters is ReadHolder listing the first waiters of the key's
// line too (Holder.Line.Waiters; at most MaxReadWaiters).
func ReadHolderWaiters(ctx context.Context, r Runner, key string, waiters int) (Holder, error) {
	holders, errs := readHolders(ctx, r, []string{key}, ReadLimits{Waiters: waiters})
	return holders[0], errs[0]
}

// ReadHolders is ReadHolder for many keys of one server in one pipelined
// round trip: holders[i] and errs[i] are what ReadHolder(keys[i]) returns.
func ReadHolders(ctx context.Context, r Runner, keys []string) (holders []Holder, errs []error) {
	return readHolders(ctx, r, keys, ReadLimits{})
}

func readHolders(ctx context.Context, r Runner, keys []string, limits ReadLimits) (holders []Holder, errs []error) {
	reads, errs := ReadKeys(ctx, r, keys, limits)
	holders = make([]Holder, len(keys))
	for i, key := range keys {
		switch {
		case errs[i] != nil:
		case reads[i].Permits != nil:
			errs[i] = fmt.Errorf("reading lock %q: %w", key, wrongType("WRONGTYPE redlease: "+key+" holds a semaphore, not a lock"))
		default:
			holders[i] = reads[i].Holder
		}
	}
	return holders, errs
}

// wrongType is a WRONGTYPE error as a server would reply it, for callers
// that tell a semaphore's key from a lock's by redis.HasErrorPrefix.
type wrongType string

func (e wrongType) Error() string { return string(e) }
func (wrongType) RedisError()     {}

// Read is what one server says about a key: a lock's holder (Holder, also
// for a free key and a key held shared), or a semaphore's permits
// (Permits).
type Read struct {
	Holder  Holder
	Permits *Permits
}

// readValueBytes is how much of a value a read returns: one byte more than
// the longest value this library writes, so a longer value still reads as
// one it did not write, and a tenant's huge value never leaves its server.
const readValueBytes = MaxIdentityLength + 1 + 2*randomBytes + 1

// ReadKeys reads keys of one server, locks' and semaphores' alike, in one
// pipelined round trip of the read script (r runs again, in a second one,
// those the server wants run another way: a script it does not know yet, a
// function it does not have), returning at most limits.Permits holders of
// each semaphore (Permits.Live counts them all) and the waiting line of
// each key with its first limits.Waiters waiters (Line.Count counts them
// all). Values are cut to a prefix on the server and reduced to identities
// here. reads[i] and errs[i] are keys[i]'s; a key of another type is a
// WRONGTYPE error.
func ReadKeys(ctx context.Context, r Runner, keys []string, limits ReadLimits) (reads []Read, errs []error) {
	calls := make([]Call, len(keys))
	args := limits.args()
	for i, key := range keys {
		calls[i] = Call{readScript, scriptKeys(key, holdersSuffix, fenceSuffix, epochSuffix, lineSuffix, permitLineSuffix), args}
	}
	cmds := r.Pipelined(ctx, calls)
	reads, errs = make([]Read, len(keys)), make([]error, len(keys))
	for i, key := range keys {
		reply, err := cmds[i].Slice()
		if err == nil {
			reads[i], err = parseRead(reply)
		}
		if err != nil {
			errs[i] = fmt.Errorf("reading %q: %w", key, err)
		}
	}
	return reads, errs
}

// parseRead reads the read script's reply: with the waiting line at its
// end, or without it (the library's function of an older build of this
// protocol, which ignores the arguments that ask for it).
func parseRead(reply []any) (Read, error) {
	if n, ok := readLength[kindOf(reply)]; ok && len(reply) == n+1 {
		line, err := parseLine(reply[n])
		if err != nil {
			return Read{}, err
		}
		read, err := parseRead(reply[:n])
		if read.Permits != nil {
			read.Permits.Line = line
		} else {
			read.Holder.Line = line
		}
		return read, err
	}
	if len(reply) < 2 {
		return Read{}, fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	kind, _ := reply[0].(int64)
	counter, ok := reply[1].(string)
	if !ok {
		return Read{}, fmt.Errorf("unexpected fence counter %T", reply[1])
	}
	fence, fenceSet, err := parseCounter(counter)
	if err != nil {
		return Read{}, err
	}
	switch {
	case kind == 0 && len(reply) == 3:
		left, ok := reply[2].(int64)
		if !ok {
			return Read{}, fmt.Errorf("unexpected reply %T", reply[2])
		}
		return Read{Holder: Holder{FenceSet: fenceSet, Fence: fence, QuarantineLeft: time.Duration(left) * time.Millisecond}}, nil
	case kind == 1 && len(reply) == 5:
		return parseHeld(reply, fenceSet, fence, func(v any) (Holder, bool) {
			value, ok := v.(string)
			return Holder{Identity: IdentityFromValue(value)}, ok
		})
	case kind == 3 && len(reply) == 5:
		return parseHeld(reply, fenceSet, fence, func(v any) (Holder, bool) {
			n, ok := v.(int64)
			return Holder{Shared: int(n)}, ok
		})
	case kind == 2 && len(reply) == 6:
		p, err := parsePermits(reply[2:])
		p.FenceSet, p.Fence = fenceSet, fence
		return Read{Permits: &p}, err
	}
	return Read{}, fmt.Errorf("unexpected reply of kind %v and %d items", reply[0], len(reply))
}

// parseHeld reads {kind, counter, who, pttl, quarantine}: a key held
// exclusively (who: the value) or shared (who: how many), who read by
// holder.
func parseHeld(reply []any, fenceSet bool, fence uint64, holder func(any) (Holder, bool)) (Read, error) {
	h, ok1 := holder(reply[2])
	ms, ok2 := reply[3].(int64)
	left, ok3 := reply[4].(int64)
	if !ok1 || !ok2 || !ok3 {
		return Read{}, fmt.Errorf("unexpected reply %T %T %T", reply[2], reply[3], reply[4])
	}
	h.Held, h.TTL, h.FenceSet, h.Fence = true, time.Duration(ms)*time.Millisecond, fenceSet, fence
	h.QuarantineLeft = time.Duration(left) * time.Millisecond
	return Read{Holder: h}, nil
}

// readLength is the length of each kind's reply without the waiting line.
var readLength = map[int64]int{0: 3, 1: 5, 2: 6, 3: 5}

// kindOf is the kind a read reply starts with (-1 for none).
func kindOf(reply []any) int64 {
	if len(reply) == 0 {
		return -1
	}
	kind, ok := reply[0].(int64)
	if !ok {
		return -1
	}
	return kind
}

// parseCounter reads a fence counter ("" when there is none).
func parseCounter(s string) (n uint64, set bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, errors.New("the fence counter is not a number")
	}
	return n, true, nil
}

package protocol

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The break-glass scripts (docs/breakglass.md): revoke a lock's holder, or
// force its key free with the fence counter raised above the holder's
// fence first. Neither changes the scripts clients run: a revoked holder's
// renewal and release simply find another value.
var (
	//go:embed lua/revoke.lua
	revokeSrc    string
	revokeScript = newScript("revoke", false, revokeSrc)

	//go:embed lua/force.lua
	forceSrc    string
	forceScript = newScript("force", false, forceSrc, fenceSrc, lineSrc)
)

// TombstonePrefix starts the identity of a revoked key's value: no client
// may take an identity with it (ValidateIdentity), so no client owns a
// tombstone.
const TombstonePrefix = "revoked-by-"

// TombstoneIdentity is the identity of the tombstone a revoke requested by
// by writes: TombstonePrefix and by, whitespace replaced by '_', cut to
// MaxIdentityLength.
func TombstoneIdentity(by string) string {
	if by == "" {
		by = "unknown"
	}
	by = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, by)
	id := TombstonePrefix + by
	if len(id) > MaxIdentityLength {
		id = id[:MaxIdentityLength]
	}
	return id
}

// IsTombstone says identity is a revoke's tombstone.
func IsTombstone(identity string) bool { return strings.HasPrefix(identity, TombstonePrefix) }

// BreakGlassArgs name the holder to revoke or force: Identity ("" for
// whoever holds the key) and, when FenceSet, the fence counter as the
// requester saw it. Either differing means the holder changed since the
// requester looked: nothing is changed. By names the requester (the
// tombstone's identity). Floor (force only; 0: none) is a fence the
// counter must end above whatever it holds: the controller's highest fence
// seen, in case the counter went back. Sharded is AcquireArgs.Sharded
// (force's "released").
type BreakGlassArgs struct {
	Identity string
	Fence    uint64
	FenceSet bool
	By       string
	Floor    uint64
	Sharded  bool
}

// BreakGlass is what a revoke or a force did.
type BreakGlass struct {
	// Done is true when the key was revoked (or forced free).
	Done bool
	// Refused says why not: RefusedFree, RefusedSemaphore, RefusedRevoked,
	// RefusedNoTTL, RefusedHolder, RefusedFence, RefusedRange.
	Refused string
	// Identity is the holder's identity found on the key ("" for a value
	// this library did not write).
	Identity string
	// Fence is the fence counter found (FenceSet false: none): the
	// holder's fence when it took the key with fencing.
	Fence    uint64
	FenceSet bool
	// TTL is the key's PTTL when revoked: nothing is granted before it
	// runs out. Revoke only.
	TTL time.Duration
	// Raised is the fence counter after a force: above Fence.
	Raised uint64
}

// Reasons a revoke or a force changed nothing.
const (
	RefusedFree      = "free"
	RefusedSemaphore = "semaphore"
	RefusedRevoked   = "revoked"
	RefusedNoTTL     = "nottl"
	RefusedHolder    = "holder"
	RefusedFence     = "fence"
	RefusedRange     = "range"
)

func (a BreakGlassArgs) fence() string {
	if !a.FenceSet {
		return ""
	}
	return strconv.FormatUint(a.Fence, 10)
}

func (a BreakGlassArgs) floor() string {
	if a.Floor == 0 {
		return ""
	}
	return strconv.FormatUint(a.Floor, 10)
}

// Revoke replaces the value of lock key with a tombstone no client owns,
// keeping its PTTL, when its holder is the one a names: the holder's next
// renewal fails, its release changes nothing, and nobody acquires the key
// before it expires. A semaphore's key is refused (RefusedSemaphore).
func Revoke(ctx context.Context, r Runner, key string, a BreakGlassArgs) (BreakGlass, error) {
	tomb, err := NewValue(TombstoneIdentity(a.By))
	if err != nil {
		return BreakGlass{}, err
	}
	reply, err := r.Run(ctx, Call{revokeScript, scriptKeys(key, fenceSuffix), []any{tomb, a.Identity, a.fence()}}).Slice()
	if err != nil {
		return BreakGlass{}, fmt.Errorf("revoking %q: %w", key, err)
	}
	return parseBreakGlass(reply, true)
}

// Force raises the fence counter of lock key above the fence of the holder
// a names (and above a.Floor), then deletes the key and says "released",
// in one script: the next holder's fence is above the revoked holder's,
// so fenced stores refuse the revoked holder's writes once the next holder
// wrote. A revoke's tombstone matches any identity. This breaks exclusion
// while the forced holder still runs.
func Force(ctx context.Context, r Runner, key string, a BreakGlassArgs) (BreakGlass, error) {
	reply, err := r.Run(ctx, Call{forceScript, scriptKeys(key, fenceSuffix, eventsSuffix), []any{a.Identity, a.fence(), a.floor(), flag(a.Sharded)}}).Slice()
	if err != nil {
		return BreakGlass{}, fmt.Errorf("forcing %q free: %w", key, err)
	}
	return parseBreakGlass(reply, false)
}

// parseBreakGlass reads {1, identity, counter, pttl|raised} or {0, reason,
// identity, counter[, pttl]}.
func parseBreakGlass(reply []any, revoke bool) (BreakGlass, error) {
	var b BreakGlass
	str := func(i int) string {
		if i < len(reply) {
			s, _ := reply[i].(string)
			return s
		}
		return ""
	}
	num := func(i int) int64 {
		if i < len(reply) {
			n, _ := reply[i].(int64)
			return n
		}
		return 0
	}
	if len(reply) < 4 {
		return b, fmt.Errorf("unexpected reply %v", reply)
	}
	b.Done = num(0) == 1
	at := 1
	if !b.Done {
		b.Refused = str(1)
		at = 2
	}
	b.Identity = str(at)
	if f := str(at + 1); f != "" {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return b, fmt.Errorf("the fence counter %.24q is not a number", f)
		}
		b.Fence, b.FenceSet = n, true
	}
	switch {
	case revoke:
		if ms := num(at + 2); ms > 0 {
			b.TTL = time.Duration(ms) * time.Millisecond
		}
	case b.Done:
		n, err := strconv.ParseUint(str(at+2), 10, 64)
		if err != nil {
			return b, fmt.Errorf("the raised fence counter %.24q is not a number", str(at+2))
		}
		b.Raised = n
	}
	return b, nil
}

// RefusedMessage says in words why a revoke or force changed nothing.
func RefusedMessage(reason string) string {
	switch reason {
	case RefusedFree:
		return "the lock is free: nothing to release"
	case RefusedSemaphore:
		return "the key is a semaphore's: break-glass releases mutex locks (permits 1) only"
	case RefusedRevoked:
		return "the holder was revoked already: nothing is granted until the key expires (force frees it now)"
	case RefusedNoTTL:
		return "the key has no expiry: a revoke would keep it forever; force frees it"
	case RefusedHolder:
		return "the lock's holder is not the one named: it changed since it was read"
	case RefusedFence:
		return "the lock's fence is not the one named: the holder changed since it was read"
	case RefusedRange:
		return "the fence counter is not an integer below 2^53-1"
	}
	return reason
}

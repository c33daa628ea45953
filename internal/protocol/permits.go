package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxPermits bounds a semaphore's number of permits: one release or FIFO
// acquire hands out at most that many in one script.
const MaxPermits = 1000

// ValidatePermits reports why a number of permits cannot be used, or nil.
func ValidatePermits(permits int) error {
	if permits < 1 || permits > MaxPermits {
		return fmt.Errorf("permits %d outside [1, %d]", permits, MaxPermits)
	}
	return nil
}

// PermitHolder is one live permit of a semaphore, without its value.
type PermitHolder struct {
	// Identity is the holder's identity from its value; "" for a value this
	// library did not write.
	Identity string
	// TTL is the permit's remaining time to live.
	TTL time.Duration
	// Confirmed is false for a permit a release handed to a waiter that has
	// not confirmed it yet (it holds it for the hand-off window only);
	// Fence and Since are then zero.
	Confirmed bool
	// Fence is the token the holder was given, Since when it took the
	// permit (the server's clock, millisecond precision).
	Fence uint64
	Since time.Time
}

// Permits is what one server says about a semaphore.
type Permits struct {
	// Live is how many permits are live.
	Live int
	// Holders are the first live permits, the soonest to expire first
	// (the order of the holder set): all of them, or as many as the read
	// asked for.
	Holders []PermitHolder
	// FenceSet is true when the fence counter exists; Fence is its value.
	FenceSet bool
	Fence    uint64
	// Line is the key's waiting line; nil when the server did not report
	// it (see Holder.Line).
	Line *Line
}

// ReadPermits reads a semaphore's live permits, its fence counter and its
// waiting line with its first waiters (at most MaxReadWaiters) in one
// script, on the server's clock. Values are reduced to identities here and
// go no further. A key a lock holds is an error (WRONGTYPE).
func ReadPermits(ctx context.Context, r Runner, key string, waiters int) (Permits, error) {
	reads, errs := ReadKeys(ctx, r, []string{key}, ReadLimits{Permits: MaxPermits, Waiters: waiters})
	switch {
	case errs[0] != nil:
		return Permits{}, errs[0]
	case reads[0].Permits == nil && reads[0].Holder.Held:
		return Permits{}, fmt.Errorf("reading semaphore %q: %w", key, wrongType("WRONGTYPE redlease: "+key+" holds a lock, not a semaphore"))
	case reads[0].Permits == nil: // no permit held
		return Permits{FenceSet: reads[0].Holder.FenceSet, Fence: reads[0].Holder.Fence, Line: reads[0].Holder.Line}, nil
	}
	return *reads[0].Permits, nil
}

// parsePermits reads {now, live, {value, expiry, ...}, {"<fence> <since>"
// or nil, ...}} of the read script.
func parsePermits(reply []any) (Permits, error) {
	var p Permits
	now, ok1 := reply[0].(int64)
	live, ok2 := reply[1].(int64)
	shown, ok3 := reply[2].([]any)
	info, ok4 := reply[3].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(shown) != 2*len(info) {
		return p, fmt.Errorf("unexpected reply %T %T %T %T", reply[0], reply[1], reply[2], reply[3])
	}
	p.Live = int(live)
	for i := 0; i < len(shown); i += 2 {
		v, _ := shown[i].(string)
		s, _ := shown[i+1].(string)
		expiry, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return p, fmt.Errorf("a permit's expiry %q is not a number", s)
		}
		h := PermitHolder{Identity: IdentityFromValue(v), TTL: time.Duration(int64(expiry)-now) * time.Millisecond}
		if fenceSince, ok := info[i/2].(string); ok {
			f, since, _ := strings.Cut(fenceSince, " ")
			fence, err1 := strconv.ParseUint(f, 10, 64)
			ms, err2 := strconv.ParseInt(since, 10, 64)
			if err1 != nil || err2 != nil {
				return p, errors.New("an entry of the holders hash is not \"<fence> <since>\"")
			}
			h.Confirmed, h.Fence, h.Since = true, fence, time.UnixMilli(ms)
		}
		p.Holders = append(p.Holders, h)
	}
	return p, nil
}

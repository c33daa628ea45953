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
	// Holders are the live permits, the soonest to expire first (the
	// order of the holder set).
	Holders []PermitHolder
	// FenceSet is true when the fence counter exists; Fence is its value.
	FenceSet bool
	Fence    uint64
}

// ReadPermits reads a semaphore's live permits and its fence counter in one
// script, on the server's clock. Values are reduced to identities here and
// go no further. A key a lock holds is an error (WRONGTYPE).
func ReadPermits(ctx context.Context, r Runner, key string) (Permits, error) {
	reply, err := r.Run(ctx, Call{readPermitsScript, []string{key, HoldersKey(key), FenceKey(key)}, nil}).Slice()
	if err != nil {
		return Permits{}, fmt.Errorf("reading semaphore %q: %w", key, err)
	}
	p, err := parsePermits(reply)
	if err != nil {
		return Permits{}, fmt.Errorf("reading semaphore %q: %w", key, err)
	}
	return p, nil
}

func parsePermits(reply []any) (Permits, error) {
	var p Permits
	if len(reply) != 4 {
		return p, fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	now, ok1 := reply[0].(int64)
	live, ok2 := reply[1].([]any)
	confirmed, ok3 := reply[2].([]any)
	counter, ok4 := reply[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(live)%2 != 0 || len(confirmed)%2 != 0 {
		return p, fmt.Errorf("unexpected reply %T %T %T %T", reply[0], reply[1], reply[2], reply[3])
	}
	info := map[string]string{}
	for i := 0; i < len(confirmed); i += 2 {
		v, _ := confirmed[i].(string)
		info[v], _ = confirmed[i+1].(string)
	}
	for i := 0; i < len(live); i += 2 {
		v, _ := live[i].(string)
		s, _ := live[i+1].(string)
		expiry, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return p, fmt.Errorf("a permit's expiry %q is not a number", s)
		}
		h := PermitHolder{Identity: IdentityFromValue(v), TTL: time.Duration(int64(expiry)-now) * time.Millisecond}
		if fenceSince, ok := info[v]; ok {
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
	if counter != "" {
		n, err := strconv.ParseUint(counter, 10, 64)
		if err != nil {
			return p, errors.New("the fence counter is not a number")
		}
		p.FenceSet, p.Fence = true, n
	}
	return p, nil
}

package protocol

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MaxReadWaiters bounds how many waiters one read lists (ReadLimits): the
// read script returns at most this many members of a key's lines, however
// long they are.
const MaxReadWaiters = 100

// Line is a key's waiting line as one server holds it: the lock's line and
// the semaphore's together (while a lock's permits move between 1 and
// more, waiters of both kinds may wait), without values.
type Line struct {
	// Count is how many wait, all of them.
	Count int
	// Oldest is when the longest wait whose arrival is known began (the
	// server's clock, microseconds); zero when nobody waits.
	Oldest time.Time
	// Waiters are the first waiters in arrival order, as many as the read
	// asked for (ReadLimits.Waiters).
	Waiters []Waiter
	// Now is the server's clock when it read the line: a waiter has waited
	// Now minus its Since.
	Now time.Time
}

// Waiter is one waiter in a key's line, without its value.
type Waiter struct {
	// Identity is the waiter's identity from its value; "" for a value this
	// library did not write.
	Identity string
	// Since is when it queued (the server's clock); zero when its arrival
	// is lost (a semaphore's waiter put back at the head of the line) or
	// was never kept (it queued by ticket, lua/line.lua's line_tickets).
	Since time.Time
}

// ReadLimits bound what one read returns of a key.
type ReadLimits struct {
	// Permits is how many of a semaphore's holders it returns (Permits.Live
	// counts them all); at most MaxPermits.
	Permits int
	// Waiters is how many waiters it lists (Line.Count counts them all),
	// at most MaxReadWaiters; 0 reads the count and the oldest arrival
	// only.
	Waiters int
}

// args are the read script's ARGV for l.
func (l ReadLimits) args() []any {
	return []any{readValueBytes, min(max(l.Permits, 0), MaxPermits), min(max(l.Waiters, 0), MaxReadWaiters)}
}

// parseLine reads the read script's waiting line, {count, now µs, oldest
// µs or "", {value prefix, arrival µs, ...}}; nil for {}, a line the
// server could not read (an ACL without ZCARD).
func parseLine(reply any) (*Line, error) {
	items, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected waiting line %T", reply)
	}
	if len(items) == 0 {
		return nil, nil // no line read is not an error: the holder was read
	}
	if len(items) != 4 {
		return nil, fmt.Errorf("unexpected waiting line of %d items", len(items))
	}
	count, ok1 := items[0].(int64)
	now, err1 := micros(items[1])
	oldest, err2 := micros(items[2])
	shown, ok2 := items[3].([]any)
	if !ok1 || !ok2 || len(shown)%2 != 0 {
		return nil, fmt.Errorf("unexpected waiting line %T %T", items[0], items[3])
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	l := &Line{Count: int(count), Now: now, Oldest: oldest}
	for i := 0; i < len(shown); i += 2 {
		v, _ := shown[i].(string)
		since, err := micros(shown[i+1])
		if err != nil {
			return nil, err
		}
		l.Waiters = append(l.Waiters, Waiter{Identity: IdentityFromValue(v), Since: since})
	}
	return l, nil
}

// micros reads a time in the server's microseconds ("" or "0": none).
func micros(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("unexpected time %T", v)
	}
	if s == "" || s == "0" {
		return time.Time{}, nil
	}
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("a time %q is not in microseconds", s)
	}
	return time.UnixMicro(us), nil
}

package lock

import (
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// InspectWaiters is how many waiters Inspect lists (Waiting.Waiters);
// Waiting.Count counts them all. The read is bounded however long the
// line is.
const InspectWaiters = 20

// Waiting is a key's waiting line as Redis holds it, without values: how
// many wait (a lock's waiters and a semaphore's), and the first of them in
// arrival order.
type Waiting struct {
	// Count is how many wait, all of them. A waiter that died stays
	// counted until its place lapses or the line reaches it.
	Count int
	// Waiters are the first InspectWaiters waiters, the longest waiting
	// first.
	Waiters []Waiter
}

// Waiter is one waiter of a key's line, without its value.
type Waiter struct {
	// Identity of the waiter; empty for a value this library did not
	// write.
	Identity string
	// Since is when it queued (the server's clock); zero when its arrival
	// was lost (a semaphore's waiter put back at the head of the line) or
	// never kept (it queued by ticket: WithTicketOrder).
	Since time.Time
	// Waited is how long it had waited when the line was read, on the
	// server's clock; 0 when Since is zero.
	Waited time.Duration
}

// waitingOf is what Inspect shows of l; nil when the server did not
// report the line (Redlock has none; a library function of an older
// build of this protocol does not report it).
func waitingOf(l *protocol.Line) *Waiting {
	if l == nil {
		return nil
	}
	w := &Waiting{Count: l.Count}
	for _, x := range l.Waiters {
		v := Waiter{Identity: x.Identity, Since: x.Since}
		if !x.Since.IsZero() {
			v.Waited = max(l.Now.Sub(x.Since), 0)
		}
		w.Waiters = append(w.Waiters, v)
	}
	return w
}

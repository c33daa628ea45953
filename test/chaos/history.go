package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Mono reads CLOCK_MONOTONIC in nanoseconds: one clock for every process on
// the machine (Go's own monotonic reading is per process).
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// MonoAt converts a time.Time carrying a monotonic reading (such as
// lock.Lease.ValidUntil) to CLOCK_MONOTONIC nanoseconds.
func MonoAt(t time.Time) int64 { return Mono() + int64(time.Until(t)) }

// Claim is one holder's belief that it held a lock during [From, Until).
type Claim struct {
	Client string `json:"client"`
	Key    string `json:"key"`
	Fence  uint64 `json:"fence"`
	From   int64  `json:"from"`
	Until  int64  `json:"until"`
	// Shared marks a shared hold (a reader's): shared claims may overlap
	// each other, never an exclusive one (Overlaps).
	Shared bool `json:"shared,omitempty"`
}

// Write is one attempt to write to a fenced (or, for naive variants, plain) store.
type Write struct {
	Client   string `json:"client"`
	Resource string `json:"resource"`
	Fence    uint64 `json:"fence"`
	At       int64  `json:"at"`
	Accepted bool   `json:"accepted"`
}

// History collects claims and writes from goroutines and helper processes.
type History struct {
	mu     sync.Mutex
	claims []Claim
	writes []Write
}

// Claim records c.
func (h *History) Claim(c Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims = append(h.claims, c)
}

// Write records w.
func (h *History) Write(w Write) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes = append(h.writes, w)
}

// Claims returns a copy of the claims recorded so far.
func (h *History) Claims() []Claim {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.claims)
}

// Writes returns a copy of the writes recorded so far.
func (h *History) Writes() []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.writes)
}

// Violation is one broken property, described for the test log.
type Violation string

// Overlaps is S1: claims of one key whose windows intersect, unless both
// are shared (a read/write lock's readers).
func Overlaps(claims []Claim) []Violation {
	byKey := map[string][]Claim{}
	for _, c := range claims {
		byKey[c.Key] = append(byKey[c.Key], c)
	}
	var out []Violation
	for _, cs := range byKey {
		slices.SortFunc(cs, func(a, b Claim) int { return cmp.Compare(a.From, b.From) })
		for i := range cs {
			for j := i + 1; j < len(cs) && cs[j].From < cs[i].Until; j++ {
				if cs[i].Shared && cs[j].Shared {
					continue
				}
				out = append(out, Violation(fmt.Sprintf("%s (fence %d) and %s (fence %d) both held %q for %v",
					cs[i].Client, cs[i].Fence, cs[j].Client, cs[j].Fence, cs[i].Key,
					time.Duration(min(cs[i].Until, cs[j].Until)-cs[j].From))))
			}
		}
	}
	return out
}

// MaxConcurrent is S1 for a semaphore of n permits: stretches of time in
// which more than n claims of one key overlap, each reported once with the
// claims then open. Claims are half-open: one ending when another starts
// does not overlap it. MaxConcurrent(claims, 1) finds what Overlaps finds,
// counted by stretch instead of by pair.
func MaxConcurrent(claims []Claim, n int) []Violation {
	type edge struct {
		at    int64
		delta int // +1 at From, -1 at Until
		c     int // index in claims
	}
	byKey := map[string][]edge{}
	for i, c := range claims {
		if c.Until <= c.From {
			continue
		}
		byKey[c.Key] = append(byKey[c.Key], edge{c.From, 1, i}, edge{c.Until, -1, i})
	}
	var out []Violation
	for key, es := range byKey {
		slices.SortFunc(es, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
		open := map[int]bool{}
		var over int64 = -1 // when the current stretch above n began
		var most int
		var during []int
		snapshot := func() {
			during = during[:0]
			for c := range open {
				during = append(during, c)
			}
		}
		for i, e := range es {
			if e.delta > 0 {
				open[e.c] = true
			} else {
				delete(open, e.c)
			}
			if i+1 < len(es) && es[i+1].at == e.at {
				continue // count once every edge of this instant is in
			}
			switch {
			case len(open) > n && over < 0:
				over, most = e.at, len(open)
				snapshot()
			case len(open) > most && over >= 0:
				most = len(open)
				snapshot()
			case len(open) <= n && over >= 0:
				slices.Sort(during)
				who := make([]string, len(during))
				for i, c := range during {
					who[i] = fmt.Sprintf("%s (fence %d)", claims[c].Client, claims[c].Fence)
				}
				out = append(out, Violation(fmt.Sprintf("%d holders of %q at once (at most %d allowed) for %v: %s",
					most, key, n, time.Duration(e.at-over), strings.Join(who, ", "))))
				over = -1
			}
		}
	}
	return out
}

// StaleAccepted is S2: an accepted write with a token lower than (or equal
// to) one accepted before it for the same resource.
func StaleAccepted(writes []Write) []Violation {
	slices.SortFunc(writes, func(a, b Write) int { return cmp.Compare(a.At, b.At) })
	highest := map[string]uint64{}
	var out []Violation
	for _, w := range writes {
		if !w.Accepted {
			continue
		}
		if top, seen := highest[w.Resource]; seen && w.Fence <= top {
			out = append(out, Violation(fmt.Sprintf("%s's write with token %d accepted after token %d", w.Client, w.Fence, top)))
		}
		highest[w.Resource] = max(highest[w.Resource], w.Fence)
	}
	return out
}

// FencesNotIncreasing reports successive holders of a key (by the start of
// their claims) whose fences did not strictly increase.
func FencesNotIncreasing(claims []Claim) []Violation {
	slices.SortFunc(claims, func(a, b Claim) int { return cmp.Compare(a.From, b.From) })
	var out []Violation
	last := map[string]Claim{}
	for _, c := range claims {
		if prev, ok := last[c.Key]; ok && c.Fence <= prev.Fence {
			out = append(out, Violation(fmt.Sprintf("%s got fence %d after %s had %d", c.Client, c.Fence, prev.Client, prev.Fence)))
		}
		last[c.Key] = c
	}
	return out
}

// LostUpdates is S4: every accepted write was one increment of a counter,
// so the counter must equal the number of accepted writes.
func LostUpdates(writes []Write, counter string) []Violation {
	accepted := 0
	for _, w := range writes {
		if w.Accepted {
			accepted++
		}
	}
	if counter != strconv.Itoa(accepted) {
		return []Violation{Violation(fmt.Sprintf("counter is %s after %d accepted increments", counter, accepted))}
	}
	return nil
}

package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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

// Overlaps is S1: claims of one key whose windows intersect.
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
				out = append(out, Violation(fmt.Sprintf("%s (fence %d) and %s (fence %d) both held %q for %v",
					cs[i].Client, cs[i].Fence, cs[j].Client, cs[j].Fence, cs[i].Key,
					time.Duration(min(cs[i].Until, cs[j].Until)-cs[j].From))))
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

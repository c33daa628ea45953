/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// maxListed is how many holders and waiters the table lists; the rest are
// counted ("and N more"). The read itself lists at most
// lock.InspectWaiters waiters, however long the line is.
const maxListed = lock.InspectWaiters

// waitingReport is a lock's waiting line as status shows it: identities in
// arrival order, never values (the read reduces them to identities at
// once).
type waitingReport struct {
	// Count is how many wait, all of them (Waiters lists the first).
	Count   int            `json:"count"`
	Waiters []waiterReport `json:"waiters,omitempty"`
}

// waiterReport is one waiter: since when it waits on the Redis server's
// clock and how long that is; both absent when its arrival was lost (a
// semaphore's waiter put back at the head of the line).
type waiterReport struct {
	Identity string     `json:"identity"`
	Since    *time.Time `json:"since,omitempty"`
	Waited   string     `json:"waited,omitempty"`
}

// waitingReportOf is what status shows of w; nil when Redis did not report
// the line (Redlock has none).
func waitingReportOf(w *lock.Waiting) *waitingReport {
	if w == nil {
		return nil
	}
	r := &waitingReport{Count: w.Count}
	for _, x := range w.Waiters {
		wr := waiterReport{Identity: x.Identity}
		if !x.Since.IsZero() {
			since := x.Since.UTC()
			wr.Since, wr.Waited = &since, x.Waited.Round(time.Millisecond).String()
		}
		r.Waiters = append(r.Waiters, wr)
	}
	return r
}

// count is the WAITERS column: how many wait, - when the line was not
// reported.
func (w *waitingReport) count() string {
	if w == nil {
		return "-"
	}
	return strconv.Itoa(w.Count)
}

// printLine lists the holders of a semaphore and the waiting line under
// the status table, the longest holding and the longest waiting first.
func (r statusReport) printLine(w io.Writer) error {
	h := r.holding
	if h == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Permits > 1 && len(h.Holders) > 0 {
		printf(tw, "\nHOLDERS (%d of %d permits)\nIDENTITY\tFENCE\tTTL\n", h.PermitsHeld, r.Permits)
		for _, p := range h.Holders[:min(len(h.Holders), maxListed)] {
			printf(tw, "%s\t%s\t%s\n", orDash(p.Identity), fenceOrPending(p), p.TTL)
		}
		printMore(tw, len(h.Holders)-maxListed)
	}
	if l := h.Waiting; l != nil && l.Count > 0 {
		printf(tw, "\nWAITING (%d, in arrival order)\n#\tIDENTITY\tWAITED\n", l.Count)
		for i, x := range l.Waiters[:min(len(l.Waiters), maxListed)] {
			printf(tw, "%d\t%s\t%s\n", i+1, orDash(x.Identity), orDash(x.Waited))
		}
		printMore(tw, l.Count-min(len(l.Waiters), maxListed))
	}
	return tw.Flush()
}

// fenceOrPending is a holder's FENCE: its token, or "pending" for a permit
// handed over and not confirmed yet.
func fenceOrPending(p permitReport) string {
	if p.Pending {
		return "pending"
	}
	return strconv.FormatUint(p.Fence, 10)
}

// printMore says how many more there are than the table lists.
func printMore(w io.Writer, more int) {
	if more > 0 {
		printf(w, "and %d more\n", more)
	}
}

package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
)

// The master's wall clock steps back a minute (an NTP correction;
// libfaketime moves the real server's clock) between two waiters'
// arrivals. Scored by the clock, the later waiter's arrival is the earlier
// one, and the release hands it the key first: the clock's order is only
// as good as the master's clock, which protocol.md says. Scored by ticket,
// the counter only goes up, and the first to queue is the first served.
func TestAClockStepBackReordersOnlyTheClockLine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tickets bool
		order   []string // the identities the two releases hand the key to
	}{
		{"clock", false, []string{"late:1", "early:1"}},
		{"tickets", true, []string{"early:1", "late:1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartWithSteppableClock(t)
			c := srv.Client(t)
			s := &server{t: t, ctx: t.Context(), c: c, r: runner(t, c)}
			key, holder := "job", value(t, "holder:1")
			ok, fence := s.take(key, holder, false)
			s.took(ok, fence, "the holder")
			s.join(key, value(t, "early:1"), tt.tickets, false)
			before, err := c.Time(s.ctx).Result()
			s.must(err)
			s.must(srv.StepClock(-time.Minute))
			after, err := c.Time(s.ctx).Result()
			s.must(err)
			if back := before.Sub(after); back < 50*time.Second {
				t.Fatalf("the server's TIME went from %v to %v: not a minute back", before, after)
			}
			s.join(key, value(t, "late:1"), tt.tickets, false)
			s.handsOffInOrder(key, holder, tt.order...)
		})
	}
}

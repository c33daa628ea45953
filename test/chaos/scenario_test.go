package chaos

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// scenario is one run of a chaos scenario: its time budget, the history it
// records, and whether it runs redlease's code or the naive variant written
// in the test, which decides what the checkers must find.
type scenario struct {
	t     *testing.T
	ctx   context.Context // the run's budget
	naive bool
	// tickets: redlease's waiter processes order the line by ticket
	// (lock.WithTicketOrder; TICKETS=1 in their environment).
	tickets bool
	h       History
}

// newScenario starts a run of t with a budget of timeout.
func newScenario(t *testing.T, timeout time.Duration, naive bool) *scenario {
	return &scenario{t: t, ctx: ctxFor(t, timeout), naive: naive}
}

// variants runs body as two subtests: first redlease's code (named
// redlease), then the naive variant (named naive), each with its own
// history and a budget of timeout.
func variants(t *testing.T, redlease, naive string, timeout time.Duration, body func(t *testing.T, s *scenario)) {
	for _, v := range []struct {
		name  string
		naive bool
	}{{redlease, false}, {naive, true}} {
		t.Run(v.name, func(t *testing.T) { body(t, newScenario(t, timeout, v.naive)) })
	}
}

// lineVariants is variants with a third run, redlease's code with the
// line ordered by ticket (s.tickets), named redlease + ", ticket order".
func lineVariants(t *testing.T, redlease, naive string, timeout time.Duration, body func(t *testing.T, s *scenario)) {
	variants(t, redlease, naive, timeout, body)
	t.Run(redlease+", ticket order", func(t *testing.T) {
		s := newScenario(t, timeout, false)
		s.tickets = true
		body(t, s)
	})
}

// check is the verdict on what a checker found: redlease's run must be
// clean, and the naive variant must be caught (a check that cannot fail
// proves nothing).
func (s *scenario) check(what string, vs []Violation) {
	s.t.Helper()
	if s.naive {
		expectCaught(s.t, what, vs)
	} else {
		expectClean(s.t, what, vs)
	}
}

// checkDocumented is the verdict where the unsafe outcome is not a naive
// client's but a documented limit (a broken assumption, a server setting):
// when unsafe, the checker must observe it, else the run must be clean.
func (s *scenario) checkDocumented(what string, vs []Violation, unsafe bool, outcome string) {
	s.t.Helper()
	if !unsafe {
		expectClean(s.t, what, vs)
		return
	}
	if len(vs) == 0 {
		s.t.Fatalf("expected the documented unsafe outcome: %s", outcome)
	}
	s.t.Logf("observed, as documented: %s", vs[0])
}

// release records client's claim on lease, held since from, ending when it
// releases the lease (or at its deadline, if earlier); it returns the
// release's error.
func (s *scenario) release(client string, lease *lock.Lease, from int64) error {
	return hold(&s.h, client, lease, from, func() error { return lease.Release(s.ctx) })
}

// holdFor holds lease, just acquired by client, for work, then releases it
// and records the claim.
func (s *scenario) holdFor(client string, lease *lock.Lease, work time.Duration) {
	from := Mono()
	time.Sleep(work)
	_ = s.release(client, lease, from)
}

// tryHold is a second client trying for key for at most wait: if it gets
// the lock, it holds it for work and its claim is recorded.
func (s *scenario) tryHold(l *lock.Locker, client, key string, wait, work time.Duration) {
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	lease, err := l.Acquire(ctx, key)
	cancel()
	if err == nil {
		s.holdFor(client, lease, work)
	}
}

// pausedHelper starts a helper process in role and SIGSTOPs it once it
// announces that it is about to write.
func (s *scenario) pausedHelper(role string, env map[string]string) *helper {
	s.t.Helper()
	p := startHelper(s.t, role, env)
	p.next(s.t, "about-to-write", 10*time.Second)
	p.signal(syscall.SIGSTOP)
	return p
}

// resume SIGCONTs a paused helper and records the write it then makes and
// the claim it reports when its belief ends. It returns the write.
func (s *scenario) resume(p *helper) Write {
	s.t.Helper()
	p.signal(syscall.SIGCONT)
	w, _ := s.recordWriteAndClaim(p)
	return w
}

// recordWriteAndClaim records the write a helper reports next, then the
// claim it reports when its belief ends; it returns the write and why the
// belief ended.
func (s *scenario) recordWriteAndClaim(p *helper) (Write, string) {
	s.t.Helper()
	w := p.next(s.t, "write", 10*time.Second)
	s.h.Write(*w.Write)
	c := p.next(s.t, "claim", 10*time.Second)
	s.h.Claim(*c.Claim)
	return *w.Write, c.Ended
}

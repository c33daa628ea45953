package election_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/election"
)

// runner is one call of election.Run in a goroutine of the test.
type runner struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's result, once done is closed

	mu      sync.Mutex
	leaders []string      // OnNewLeader's arguments, in order
	newLead chan struct{} // signalled after every OnNewLeader
}

// start runs election.Run(cfg) until stop or the end of the test. It wraps
// cfg.Callbacks.OnNewLeader to record what the candidate observed.
func start(t testing.TB, cfg election.Config) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{id: cfg.Identity, cancel: cancel, done: make(chan struct{}), newLead: make(chan struct{}, 1)}
	next := cfg.Callbacks.OnNewLeader
	cfg.Callbacks.OnNewLeader = func(id string) {
		r.mu.Lock()
		r.leaders = append(r.leaders, id)
		r.mu.Unlock()
		select {
		case r.newLead <- struct{}{}:
		default:
		}
		if next != nil {
			next(id)
		}
	}
	go func() {
		defer close(r.done)
		r.err = election.Run(ctx, cfg)
	}()
	// Tests that check what Run returned stop it themselves; at the end only
	// its returning counts (stop fails the test if it does not).
	t.Cleanup(func() { _ = r.stop(t) })
	return r
}

// stop cancels Run's context and returns its result; it fails the test if
// Run does not return within 10s.
func (r *runner) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(10 * time.Second):
		t.Errorf("%s: Run did not return within 10s of its context's cancellation", r.id)
		return nil
	}
}

// observed returns a copy of the leaders reported to OnNewLeader so far.
func (r *runner) observed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.leaders)
}

// waitLeader waits until the last leader reported is id.
func (r *runner) waitLeader(t testing.TB, id string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		if l := r.observed(); len(l) > 0 && l[len(l)-1] == id {
			return
		}
		select {
		case <-r.newLead:
		case <-deadline:
			t.Fatalf("%s: OnNewLeader(%q) not seen within %v; saw %q", r.id, id, d, r.observed())
		}
	}
}

// leadership is one OnStartedLeading call seen by a test.
type leadership struct {
	id    string
	fence uint64
	at    time.Time
}

// recv waits for a value from ch for at most d.
func recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
		panic("unreachable")
	}
}

// quantile returns the q-quantile (nearest rank) of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// summary formats a distribution for the logs.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("n=%d min=%v p50=%v p90=%v p99=%v max=%v", len(s),
		round(s[0]), round(quantile(s, 0.5)), round(quantile(s, 0.9)), round(quantile(s, 0.99)), round(s[len(s)-1]))
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}

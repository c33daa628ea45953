package controllers

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	// slowReconcile is when a namespace counts as slow: its reconciles
	// took this long on average, recently (servers that do not answer
	// make each one wait for the probe timeout).
	slowReconcile = time.Second
	// tenantRetry is how soon a reconcile deferred by the gate comes back.
	tenantRetry = 250 * time.Millisecond
	// recentWeight is the share of the newest reconcile in a namespace's
	// average reconcile time.
	recentWeight = 0.3
)

// tenantGate keeps one namespace whose locks point at servers that do not
// answer from taking every worker: while a namespace is slow, at most half
// the workers (at least one) may reconcile its locks at once; the others
// are deferred for tenantRetry, so that the queue reaches other
// namespaces. A namespace whose reconciles are quick is never held back,
// however many locks it has (TestASlowTenantDoesNotStarveTheOthers).
type tenantGate struct {
	clock clock.PassiveClock
	limit int

	mu      sync.Mutex
	tenants map[string]*tenantLoad
}

type tenantLoad struct {
	running int
	average time.Duration // of the recent reconciles
}

// newTenantGate gates workers reconcilers; workers ≤ 1 gates nothing.
func newTenantGate(clk clock.PassiveClock, workers int) *tenantGate {
	return &tenantGate{clock: clk, limit: max(1, workers/2), tenants: map[string]*tenantLoad{}}
}

// enter admits a reconcile of namespace's lock, or says false when the
// namespace is slow and at its limit. done, called when the reconcile
// ends, records its duration.
func (g *tenantGate) enter(namespace string) (done func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tenants[namespace]
	if t == nil {
		t = &tenantLoad{}
		g.tenants[namespace] = t
	}
	if t.average >= slowReconcile && t.running >= g.limit {
		return nil, false
	}
	t.running++
	start := g.clock.Now()
	return func() { g.leave(namespace, g.clock.Since(start)) }, true
}

func (g *tenantGate) leave(namespace string, took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tenants[namespace]
	t.running--
	t.average = time.Duration(recentWeight*float64(took) + (1-recentWeight)*float64(t.average))
	if t.running == 0 && t.average < time.Millisecond {
		delete(g.tenants, namespace) // quick and idle: nothing to remember
	}
}

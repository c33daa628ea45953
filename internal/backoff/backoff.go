// Package backoff is the module's one jittered exponential backoff: the
// library's waits, the election campaign, pkg/kube's watch and the
// controller's requeues all use it, so retries that start together spread
// out instead of arriving together (DESIGN §9, pitfall 7).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter returns a duration drawn uniformly from [d/2, d].
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1) //nolint:gosec // G404: jitter spreads retries out; it needs no cryptographic randomness
}

// Exponential doubles a delay from Min up to Max. The zero value is not
// usable: set Min and Max (0 < Min ≤ Max). Not safe for concurrent use.
type Exponential struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the next delay, jittered, and doubles the one after it.
func (b *Exponential) Next() time.Duration {
	return Jitter(b.Step())
}

// Step returns the next delay without jitter, and doubles the one after it.
func (b *Exponential) Step() time.Duration {
	if b.cur < b.Min {
		b.cur = b.Min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.Max)
	return d
}

// Reset starts again from Min.
func (b *Exponential) Reset() { b.cur = b.Min }

package bench

import (
	"slices"
	"time"
)

// Percentile returns the q-quantile (0 < q ≤ 1) of sorted by the
// nearest-rank method: the smallest sample with at least q of the samples
// at or below it. Zero for no samples.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999999) - 1 // ceil(q·n) − 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Latency summarises per-operation durations.
type Latency struct {
	N             int
	P50, P99, Max time.Duration
	Mean          time.Duration
}

// Summarize sorts d in place and summarises it.
func Summarize(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return Latency{N: len(d), P50: Percentile(d, 0.50), P99: Percentile(d, 0.99), Max: d[len(d)-1], Mean: sum / time.Duration(len(d))}
}

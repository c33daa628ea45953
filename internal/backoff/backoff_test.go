package backoff

import (
	"testing"
	"time"
)

func TestJitterStaysInTheUpperHalf(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 10 * time.Millisecond, time.Second} {
		for range 1000 {
			if got := Jitter(d); got < d/2 || got > d {
				t.Fatalf("Jitter(%v) = %v, outside [%v, %v]", d, got, d/2, d)
			}
		}
	}
}

func TestExponentialDoublesUpToMaxAndResets(t *testing.T) {
	b := Exponential{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, w := range want {
		if got := b.Step(); got != w*time.Millisecond {
			t.Fatalf("step %d = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got < 5*time.Millisecond || got > 10*time.Millisecond {
		t.Fatalf("Next after Reset = %v, want within [5ms, 10ms]", got)
	}
}

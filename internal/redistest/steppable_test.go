package redistest

import (
	"testing"
	"time"
)

// A stepped clock moves the server's TIME and the expiry of its keys, steps
// add up, and a server started without a steppable clock refuses a step.
func TestAStepOfTheClockMovesTimeAndExpiry(t *testing.T) {
	t.Parallel()
	s := StartWithSteppableClock(t)
	c := s.Client(t)
	ctx := t.Context()
	if err := c.Set(ctx, "lease", "v", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		by     time.Duration
		offset time.Duration // from the real clock, all steps so far
		lease  bool          // the 30 s key still there
	}{
		{-time.Minute, -time.Minute, true},
		{2 * time.Minute, time.Minute, false},
	} {
		if err := s.StepClock(step.by); err != nil {
			t.Fatal(err)
		}
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if off := time.Until(now); off < step.offset-10*time.Second || off > step.offset+10*time.Second {
			t.Errorf("after a step by %v the server's TIME is %v from the real clock, want about %v", step.by, off, step.offset)
		}
		n, err := c.Exists(ctx, "lease").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := n == 1; got != step.lease {
			t.Errorf("after a step by %v (offset %v) the 30 s key exists: %v, want %v", step.by, step.offset, got, step.lease)
		}
	}
	if err := StartStandalone(t).StepClock(time.Second); err == nil {
		t.Error("a server without a steppable clock took a step")
	}
}

package redistest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// pollInterval is how often poll re-checks a condition.
const pollInterval = 25 * time.Millisecond

// poll calls cond until it returns nil, ctx ends or timeout passes. It
// returns nil or cond's last error, since the last reason for waiting is what
// a failure message needs. An error wrapped by permanent ends the wait at
// once and is returned unwrapped.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond(ctx)
		var stop permanentError
		if errors.As(err, &stop) {
			return stop.err
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %v: %w", time.Since(start).Round(time.Millisecond), err)
		case <-time.After(pollInterval):
		}
	}
}

// permanentError is a poll condition's verdict that waiting cannot help.
type permanentError struct{ err error }

func permanent(err error) error { return permanentError{err} }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

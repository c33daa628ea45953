package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

func TestNotSentOnlyForErrorsBeforeTheRequestLeft(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"wrapped by the lock", fmt.Errorf("lock: acquire %q: %w", "k", refused), true},
		{"no connection free in the pool", redis.ErrPoolTimeout, true},
		{"connection reset while reading the reply", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"connection closed before the reply", io.EOF, false},
		{"deadline while waiting for the reply", context.DeadlineExceeded, false},
		{"an error reply", errors.New("ERR something"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocol.NotSent(tt.err); got != tt.want {
				t.Fatalf("NotSent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

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

func TestNotRunForErrorsThatProveNothingWasWritten(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reply := func(s string) error { return replyError(s) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"not sent", refused, true},
		{"loading after a restart", reply("LOADING Redis is loading the dataset in memory"), true},
		{"wrapped by the lock", fmt.Errorf("lock: acquire %q: %w", "k", reply("LOADING Redis is loading the dataset in memory")), true},
		{"another script past its limit", reply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), true},
		{"a replica that lost its master", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"a replica", reply("READONLY You can't write against a read only replica."), true},
		{"a cluster without quorum", reply("CLUSTERDOWN The cluster is down"), true},
		{"a slot being moved", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"a script's own error", reply("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{"a key of another type", reply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"a code that only starts alike", reply("BUSYGROUP Consumer Group name already exists"), false},
		{"connection closed before the reply", io.EOF, false},
		{"deadline while waiting for the reply", context.DeadlineExceeded, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocol.NotRun(tt.err); got != tt.want {
				t.Fatalf("NotRun(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// replyError is an error reply as go-redis returns it (a redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }

func (replyError) RedisError() {}

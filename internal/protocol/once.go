package protocol

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// An acquisition is sent once: go-redis does not send it again on its own
// after an error, as it does other commands (MaxRetries, 3 by default).
// Two reasons:
//   - A resend after a lost reply runs the script a second time, which finds
//     the key held by the caller's own value and answers "not acquired": the
//     caller then waits out a key that nobody will use.
//   - Only a command sent once lets the caller tell an attempt that never
//     left the client from one that may have run (NotSent): after go-redis's
//     own retries, the last error says nothing of the attempts before it,
//     one of which may have been written before its connection broke.
//
// The caller retries instead, knowing what a resend means.

// sentOnce is a command go-redis must not resend (its NoRetry): the error
// of its one attempt is the command's error.
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again.
func (sentOnce) NoRetry() bool { return true }

// processor is what can send a command of ours: go-redis's clients and
// pipelines.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// sentOnly marks s as sent once (see above).
func sentOnly(s *Script) *Script {
	s.once = true
	return s
}

// NotSent reports an error that proves an acquisition (AcquireCall,
// AcquirePermitScript) never reached the server: the connection could not
// be made (refused, unreachable, a dial timeout) or the pool had none to
// give. The script did not run, so the caller may try again with the same
// value and keep its place in the waiting line. Any other error (a timeout
// or a connection lost after sending, a cancelled context) may follow a
// script that ran.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, redis.ErrPoolTimeout)
}

// NotRun reports an error that proves an acquisition wrote nothing: it was
// not sent (NotSent), or the server refused it (Refused). The caller may
// try again with the same value and keep its place in the waiting line: a
// waiter told LOADING by a restarted server is still in the line it loads.
func NotRun(err error) bool { return NotSent(err) || Refused(err) }

// refusals are the error codes of a server in a passing state, each
// answered before a script could write:
//   - LOADING: loading its data after a restart, before running anything;
//   - BUSY: another script is past its time limit;
//   - MASTERDOWN: a replica that lost its master (replica-serve-stale-data no);
//   - CLUSTERDOWN, TRYAGAIN: a cluster without quorum, a slot being moved;
//   - READONLY: a replica (a failover under way); a script's first write
//     fails there, and a function that writes is refused before it runs.
var refusals = map[string]bool{
	"LOADING": true, "BUSY": true, "MASTERDOWN": true, "CLUSTERDOWN": true, "TRYAGAIN": true, "READONLY": true,
}

// Refused reports an error reply by which the server refused a command for
// a passing state (refusals): worth another attempt, and proof that the
// command wrote nothing.
func Refused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	code, _, _ := strings.Cut(reply.Error(), " ")
	return refusals[code]
}

package lock

import (
	"errors"
	"fmt"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// Sentinel errors. Match them with errors.Is; errors that carry data
// (NotAcquiredError) match the sentinel of their kind.
var (
	// ErrNotAcquired: the lock is held by someone else (TryAcquire), or an
	// attempt's validity ran out before it completed.
	ErrNotAcquired = errors.New("lock: not acquired")
	// ErrLeaseLost: the lease ended without Release: renewal failed until the
	// local deadline passed, the key was no longer ours, or WithMaxHold ran out.
	ErrLeaseLost = errors.New("lock: lease lost")
	// ErrReleased: the lease was ended by Release (or Locker.Close).
	ErrReleased = errors.New("lock: lease released")
	// ErrNotReplicated: WAIT saw fewer replica acknowledgements than
	// WithReplicaAck asked for; the key was released.
	ErrNotReplicated = errors.New("lock: acquisition not replicated")
	// ErrQuorum: a Redlock operation did not reach a majority of nodes.
	ErrQuorum = errors.New("lock: quorum not reached")
	// ErrInvalidConfig: a constructor or option got an argument it cannot use.
	ErrInvalidConfig = errors.New("lock: invalid configuration")
	// ErrClosed: the Locker was closed.
	ErrClosed = errors.New("lock: locker closed")
	// ErrMaxHoldExceeded is the cause wrapped by ErrLeaseLost when renewal
	// stopped because the lease reached its WithMaxHold limit.
	ErrMaxHoldExceeded = errors.New("lock: max hold time reached")
	// ErrLibraryMissing: the server has not loaded the redlease function
	// library and refuses this caller's scripts (a tenant of a store that
	// allows functions only, before the operator loaded it). Acquire
	// retries it within its context; see WithFunctions.
	ErrLibraryMissing = protocol.ErrLibraryMissing
	// ErrKeysAcrossSlots: TryAcquireAll was given keys of different Redis
	// Cluster hash slots, which one script cannot take together. Give them
	// a common hash tag ("{order-42}:debit", "{order-42}:credit").
	// ErrUpgradeContended: Lease.Upgrade found other shared holders of the
	// key (or a failover quarantine holding grants back); the shared lease
	// goes on unchanged.
	ErrUpgradeContended = errors.New("lock: upgrade refused: others hold the key shared")
	ErrKeysAcrossSlots  = errors.New("lock: keys in different Redis Cluster slots (give them one hash tag)")
)

// NotAcquiredError reports a lock held by someone else (or a semaphore
// whose permits are all held), with the holder's remaining TTL as the server
// saw it (0 when unknown). It matches ErrNotAcquired.
type NotAcquiredError struct {
	Key string
	// HolderTTL is the holder's remaining time to live; negative when the key
	// exists without a TTL (set by something other than this library). For
	// a semaphore, how long until enough permits expire for one to be free.
	HolderTTL time.Duration
	// Permits is the semaphore's number of permits; 0 for a lock.
	Permits int
	// Quarantine is how long a failover quarantine still holds grants back
	// (WithFailoverQuarantine; HolderTTL is then at least as long); 0 when
	// none.
	Quarantine time.Duration
	// Reason is set when the attempt itself succeeded on the server but did
	// not count (for example, its validity ran out before it completed).
	Reason string

	// recordedTTL is the longest TTL the key's epoch record holds (the
	// failover quarantine's; 0 without it).
	recordedTTL time.Duration
	// seen is the attempt's send time and the hand-off counter it saw,
	// with the counter's history (a waiter's record, handoff.go); zero
	// when it did not reach Redis.
	seen seenAttempt
}

func (e *NotAcquiredError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("lock: %q not acquired: %s", e.Key, e.Reason)
	}
	if e.Quarantine > 0 {
		return fmt.Sprintf("lock: %q not acquired: its server changed (a failover or a restart), and a quarantine holds grants back for %v more", e.Key, e.Quarantine)
	}
	if e.Permits > 0 {
		return fmt.Sprintf("lock: no permit of semaphore %q acquired: none of its %d free, one frees by expiry in %v", e.Key, e.Permits, e.HolderTTL)
	}
	return fmt.Sprintf("lock: %q not acquired: held by another owner for %v more", e.Key, e.HolderTTL)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

func invalidConfig(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// QuorumError reports a Redlock operation that did not reach a majority
// because nodes failed. It matches ErrQuorum; Unwrap returns the node errors.
type QuorumError struct {
	Op     string
	Quorum int
	// Nodes are the nodes that failed, in the order given to NewRedlock.
	Nodes []NodeError
}

// NodeError is one node's failure.
type NodeError struct {
	Index int
	Addr  string
	Err   error
}

func (e NodeError) Error() string { return fmt.Sprintf("node %d (%s): %v", e.Index, e.Addr, e.Err) }

func (e NodeError) Unwrap() error { return e.Err }

func (e *QuorumError) Error() string {
	msg := fmt.Sprintf("lock: %s: quorum of %d not reached", e.Op, e.Quorum)
	for _, n := range e.Nodes {
		msg += "; " + n.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrQuorum) true.
func (e *QuorumError) Is(target error) bool { return target == ErrQuorum }

// Unwrap returns the failed nodes' errors.
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, len(e.Nodes))
	for i, n := range e.Nodes {
		errs[i] = n
	}
	return errs
}

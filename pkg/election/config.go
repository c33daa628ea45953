package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// DefaultTTL is the lease length when Config.TTL is zero: controller-runtime's
// default lease duration.
const DefaultTTL = 15 * time.Second

// ErrLeadershipLost is returned by Run when the lease ended while this
// candidate led and its context was still live: renewal failed until the
// local deadline passed, or the key was found to be someone else's. The
// error wraps the lease's error too (errors.Is(err, lock.ErrLeaseLost)).
var ErrLeadershipLost = errors.New("election: leadership lost")

// Config describes one candidate. The zero values of the optional fields
// are documented with them.
type Config struct {
	// Client reaches the Redis deployment that holds the key: a standalone
	// client, a Sentinel failover client or a Cluster client. Required. Run
	// neither closes it nor changes it.
	Client redis.UniversalClient

	// Key is the lock key the candidates contend for (the rules of
	// lock.ValidateKey). Required.
	Key string

	// Identity names this candidate in the lock value, in "acquired"
	// messages and in other candidates' OnNewLeader. Default
	// lock.DefaultIdentity() (pod name or hostname, and pid). It should be
	// unique among the candidates: OnNewLeader cannot tell apart two
	// candidates with the same identity.
	Identity string

	// TTL is the lease length written to Redis: after a leader crashes,
	// another candidate takes over within TTL (plus a few milliseconds).
	// Default DefaultTTL (15s); at least 10ms.
	TTL time.Duration

	// RenewInterval is how often the leader renews its lease. Default TTL/3
	// (lock.DefaultRenewInterval); must be shorter than TTL.
	RenewInterval time.Duration

	// ReleaseOnCancel makes a leader whose ctx is cancelled delete the key
	// as soon as OnStartedLeading has returned, so that another candidate
	// takes over within a few round trips. Without it the leader only stops
	// renewing, and the others take over when the TTL runs out (as after a
	// crash).
	ReleaseOnCancel bool

	// Callbacks are the hooks Run calls. OnStartedLeading is required.
	Callbacks Callbacks

	// Logger receives Run's log lines: leadership started and stopped, and
	// errors talking to Redis (retried). Default: none. Lock values are
	// never logged.
	Logger logr.Logger

	// LockOptions are passed to lock.New, e.g. lock.WithReplicaAck,
	// lock.WithDriftFactor, lock.WithMetrics or lock.WithFencing. Run sets
	// the TTL, renew interval and identity from this Config and the logger
	// (they override options given here), and renews the lease itself (the
	// lock's watchdog is off), so that a leader can stop renewing without
	// deleting the key when ReleaseOnCancel is false.
	LockOptions []lock.Option
}

// Callbacks are the hooks of Run. They run in goroutines of Run and must not
// block forever: Run waits for them before it returns.
type Callbacks struct {
	// OnStartedLeading is called in its own goroutine when this candidate
	// becomes leader. ctx is the lease's context, additionally cancelled when
	// Run's context is: it is done the moment leadership is lost, the lease's
	// local deadline passes, or the candidate is asked to stop, and
	// context.Cause(ctx) says which (lock.ErrLeaseLost for a lost lease).
	// fence is the leadership's fencing token (0 if lock.WithFencing(false)
	// was given): pass it with every write to a fenced store.
	//
	// Returning early does not end leadership (as in client-go): the
	// candidate keeps renewing until its context is cancelled or the lease
	// is lost. Run does not return, release the key or call
	// OnStoppedLeading before OnStartedLeading has returned, so it must
	// return soon after ctx is done. Required.
	OnStartedLeading func(ctx context.Context, fence uint64)

	// OnStoppedLeading is called once after every leadership, after
	// OnStartedLeading has returned (and, with ReleaseOnCancel, after the key
	// was released), before Run returns. It is not called when Run returns
	// without having led (unlike client-go, which always calls it).
	// Optional.
	OnStoppedLeading func()

	// OnNewLeader is called with the identity of each leader this candidate
	// observes taking over, its own included, in the order observed, from a
	// single goroutine; never with "". A leader that takes the key again
	// after it was seen free is reported again. It learns of changes from
	// the lock's "acquired <identity>" messages, from a GET of the key when
	// the subscription starts or comes back, and from a GET when the
	// holder's PTTL runs out. It must return quickly: observation waits for
	// it. Optional.
	OnNewLeader func(identity string)
}

// Validate reports why Run would refuse c, with an error matching
// lock.ErrInvalidConfig, or nil. Defaults are applied first, so a zero TTL,
// RenewInterval or Identity is valid.
func (c Config) Validate() error {
	_, err := c.complete()
	return err
}

// complete applies the defaults, validates, and returns the options of
// Run's Locker.
func (c *Config) complete() ([]lock.Option, error) {
	if c.Client == nil {
		return nil, invalid("nil Client")
	}
	if err := lock.ValidateKey(c.Key); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	if c.Identity == "" {
		c.Identity = lock.DefaultIdentity()
	}
	if err := protocol.ValidateIdentity(c.Identity); err != nil {
		return nil, invalid("%v", err)
	}
	switch {
	case c.TTL < 0:
		return nil, invalid("TTL %v is negative", c.TTL)
	case c.TTL == 0:
		c.TTL = DefaultTTL
	}
	switch {
	case c.RenewInterval < 0:
		return nil, invalid("RenewInterval %v is negative", c.RenewInterval)
	case c.RenewInterval == 0:
		c.RenewInterval = lock.DefaultRenewInterval(c.TTL)
	}
	if c.RenewInterval >= c.TTL {
		return nil, invalid("RenewInterval %v must be shorter than TTL %v", c.RenewInterval, c.TTL)
	}
	if c.Callbacks.OnStartedLeading == nil {
		return nil, invalid("nil Callbacks.OnStartedLeading")
	}
	opts := append(append([]lock.Option(nil), c.LockOptions...),
		lock.WithTTL(c.TTL),
		lock.WithRenewInterval(c.RenewInterval),
		lock.WithoutWatchdog(),
		lock.WithIdentity(c.Identity),
		// The observers follow the leader from these messages.
		lock.WithHolderMessages(),
		// Run logs what matters itself. The Locker logs nothing, because the
		// lease of a leader that steps down without releasing lives on until
		// its deadline, after Run returned.
		lock.WithLogger(logr.Discard()),
	)
	// lock.New checks the rest (TTL bounds, drift, the other options); it
	// does no I/O and starts nothing.
	if _, err := lock.New(c.Client, opts...); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	return opts, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("election: %w: %s", lock.ErrInvalidConfig, fmt.Sprintf(format, args...))
}

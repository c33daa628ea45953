package lock

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlease/redlease/internal/protocol"
)

// Option configures a Locker. Every option states its default.
type Option func(*config)

type config struct {
	ttl           time.Duration
	renewInterval time.Duration // 0: DefaultRenewInterval(ttl)
	watchdog      bool
	maxHold       time.Duration
	identity      string
	driftFactor   float64
	backoffMin    time.Duration
	backoffMax    time.Duration
	replicaAcks   int
	replicaWait   time.Duration
	fencing       bool
	fifo          bool
	tickets       bool
	announce      bool
	clock         Clock
	logger        logr.Logger
	registerer    prometheus.Registerer
	tracer        trace.TracerProvider
	closeTimeout  time.Duration
	nodeTimeout   time.Duration // Redlock; 0: nodeTimeoutFor's default
	functions     Functions
	quarantine    protocol.Quarantine
}

const (
	// DefaultTTL is the lease length when WithTTL is not given.
	DefaultTTL = 30 * time.Second
	// DefaultDriftFactor is the share of the TTL set aside for clock drift.
	DefaultDriftFactor = 0.01
	// driftConstant is added to the drift allowance: the granularity of
	// Redis's expiry plus scheduling noise (as in the Redlock description).
	driftConstant = 2 * time.Millisecond
	// minTTL keeps ttl well above the drift allowance.
	minTTL = 10 * time.Millisecond
)

func defaultConfig() config {
	return config{
		ttl:          DefaultTTL,
		watchdog:     true,
		identity:     DefaultIdentity(),
		driftFactor:  DefaultDriftFactor,
		backoffMin:   10 * time.Millisecond,
		backoffMax:   time.Second,
		fencing:      true,
		clock:        realClock{},
		logger:       logr.Discard(),
		closeTimeout: 5 * time.Second,
	}
}

// WithTTL sets the lease length written to Redis. Default 30s (DefaultTTL);
// at least 10ms.
func WithTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithRenewInterval sets the watchdog period. Default ttl/3
// (DefaultRenewInterval); must be positive and at most half of the validity
// (ttl − drift)/2, so that a renewal sent one interval after the last one
// has time to come back before the lease runs out.
func WithRenewInterval(d time.Duration) Option { return func(c *config) { c.renewInterval = d } }

// WithoutWatchdog turns automatic renewal off: a lease then ends at its
// ValidUntil unless the caller renews it with Lease.Renew. Default: the
// watchdog renews every renew interval.
func WithoutWatchdog() Option { return func(c *config) { c.watchdog = false } }

// WithMaxHold caps how long a lease may be held in total: renewals never
// extend it past acquisition + d, so a stuck task cannot keep a lock forever
// (the watchdog proves the process is alive, not that its work progresses).
// The lease then ends with ErrLeaseLost wrapping ErrMaxHoldExceeded.
// Default 0: no cap. When set, it must be at least the TTL.
func WithMaxHold(d time.Duration) Option { return func(c *config) { c.maxHold = d } }

// WithIdentity names the holder in lock values, "acquired" messages and the
// controller's status. Default DefaultIdentity() (pod name or hostname, and
// pid). No whitespace, at most 253 bytes.
func WithIdentity(identity string) Option { return func(c *config) { c.identity = identity } }

// WithDriftFactor sets the share of the TTL subtracted from a lease's local
// validity for clock drift between this process and Redis (plus 2ms).
// Default 0.01; must be in [0, 0.5).
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithRetryBackoff bounds the jittered exponential backoff Acquire uses after
// errors, and minBackoff also bounds the jitter added to waits for a holder's
// TTL. Default 10ms and 1s.
func WithRetryBackoff(minBackoff, maxBackoff time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = minBackoff, maxBackoff }
}

// WithReplicaAck makes every acquisition and every renewal wait until n
// replicas acknowledged it (Redis WAIT n timeout, sent in one pipeline with
// the write, on the same connection). An acquisition with fewer
// acknowledgements is released and fails with ErrNotReplicated; a renewal
// with fewer fails with ErrNotReplicated and does not move the lease's
// local deadline, so ValidUntil never exceeds what the acknowledged
// replicas hold. This is what keeps a lease (and its fence increment)
// through a failover to an acknowledging replica — not through one to a
// replica that did not acknowledge, nor through the loss of every replica
// that did. Default n=0: no WAIT. timeout must be positive and shorter than
// the client's ReadTimeout. Needs a *redis.Client (standalone or Sentinel
// failover) or a *redis.ClusterClient.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(c *config) { c.replicaAcks, c.replicaWait = n, timeout }
}

// WithNodeTimeout sets how long each Redlock node gets to answer one
// request, far below the TTL so a slow node cannot eat the validity.
// Default ttl/10, between 5ms and 1s. Ignored by New.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithFencing turns fencing tokens on or off. Default true: every
// acquisition increments the key's fence counter and Lease.Fence returns it.
func WithFencing(enabled bool) Option { return func(c *config) { c.fencing = enabled } }

// WithFIFO makes the key's waiting line strict: a free key goes to the
// first waiter in line, never to a caller that just arrived (Redisson's fair
// lock). Without it (the default) a release still hands the key to the
// first waiter, and a caller arriving while others wait queues behind them;
// only a key freed by expiry (its holder died) goes to whoever asks first.
// FIFO costs a look at the line on every acquisition. Not with NewRedlock.
func WithFIFO() Option { return func(c *config) { c.fifo = true } }

// WithTicketOrder orders the key's waiting line by ticket (protocol 7):
// a waiter's arrival is the next value of the key's fence counter, drawn
// on the server, instead of the server's clock. The counter is replicated
// with the line and never goes back within one server history, where a
// clock step on the master reorders waiters scored by the clock; and a
// waiter's first attempt runs one command less (INCR in place of TIME and
// the counter's GET). The cost: fences have gaps (consumers rely only on
// their order, pkg/fence), and a waiter's arrival time is no longer kept
// (Inspect's Waiter.Since is zero, status.waiting.oldestSince absent).
//
// Default off: the line by the clock. Turn it on only once every client
// of the key speaks protocol 7 (every pod runs this release or later,
// docs/upgrading.md): a ticket sorts below every clock arrival, so an
// older client's waiters would be overtaken by every new one. A waiter
// with this option that finds its place scored by the clock (it queued
// before the switch) is given a ticket at the back of the line then, not
// left behind every later ticket. Not with NewRedlock (no waiting line).
func WithTicketOrder() Option { return func(c *config) { c.tickets = true } }

// WithHolderMessages publishes "acquired <identity>" on the key's events
// channel at every acquisition, and "released" when a release leaves the
// key free, for observers that follow the holder (pkg/election sets it).
// Default off: waiters need neither (a release hands the key to the first
// waiter and says so itself).
func WithHolderMessages() Option { return func(c *config) { c.announce = true } }

// Functions says how a Locker runs the protocol's Lua: as the functions of
// the redlease library (FCALL, Redis 7.0 and later and Valkey) or as
// scripts (EVALSHA).
type Functions = protocol.FunctionsMode

const (
	// FunctionsAuto calls the library's functions on servers that have the
	// library loaded (the operator loads it on the servers of its stores)
	// and runs scripts elsewhere: a Locker tries functions first, and the
	// way that works is the one it keeps until a call says otherwise (the
	// library wiped by a restart-empty, a store that refuses scripts).
	FunctionsAuto = protocol.FunctionsAuto
	// FunctionsOff only runs scripts (EVALSHA, EVAL on first use).
	FunctionsOff = protocol.FunctionsOff
	// FunctionsLoad loads the library where it is missing (FUNCTION LOAD
	// rights needed: a library-only user on its own Redis), then calls it.
	FunctionsLoad = protocol.FunctionsLoad
)

func knownFunctions(f Functions) bool {
	return f == FunctionsAuto || f == FunctionsOff || f == FunctionsLoad
}

// WithFunctions chooses how the Locker runs the protocol's Lua. Default
// FunctionsAuto. Where the library is missing and scripts are refused (a
// tenant of a store that allows functions only, before the operator loaded
// it), Acquire waits and retries within its context, as for any transient
// error; TryAcquire, Renew and Release return an error wrapping
// ErrLibraryMissing.
func WithFunctions(f Functions) Option { return func(c *config) { c.functions = f } }

// MissingEpoch says what a key without an epoch record means to the
// failover quarantine (WithFailoverQuarantine).
type MissingEpoch int

const (
	// MissingEpochWaits reads a missing record as one lost with its key:
	// the first acquisition of a key waits one quarantine. The operator's
	// locks use it at no cost: the controller writes their records ahead
	// of first use, so only a lost record waits.
	MissingEpochWaits MissingEpoch = iota
	// MissingEpochIsNew reads a missing record as a new key: no wait. A
	// failover that loses a key together with its record (both written
	// after the last write the promoted replica received) then goes
	// unnoticed, as without quarantine.
	MissingEpochIsNew
)

// WithFailoverQuarantine makes the lock's scripts hold grants back after
// its key's server changed (a replica promoted by an asynchronous failover,
// a restart that may have lost writes), until every lease the old server
// granted or renewed has ended on its holder's clock: the longest TTL
// granted on the key, plus cutoff, plus 2 % for clock drift. cutoff bounds
// how long a master cut off from its replicas may still accept writes:
// min-replicas-max-lag plus 2 s where every replica is required
// (min-replicas-to-write equal to the number of replicas; with fewer, a
// partitioned master keeping one replica accepts writes for as long as the
// partition lasts, and no cutoff holds), 0 on a standalone server. Waiters
// keep their places and wait it out; Lease holders whose keys survived are
// not disturbed. Every client of a key must use it (protocol 5: older
// clients grant during a quarantine). It costs no round trip: two INFO
// sections and a read of the record per acquisition, renewal and release
// (the Redis user needs +info). docs/protocol.md argues the bound. Locks
// and semaphores alike; not with NewRedlock. Default: off.
func WithFailoverQuarantine(cutoff time.Duration, missing MissingEpoch) Option {
	return func(c *config) {
		c.quarantine = protocol.Quarantine{On: true, Cutoff: cutoff, MissingWaits: missing == MissingEpochWaits}
	}
}

// WithClock injects the time source (tests). Default: the system clock.
func WithClock(clock Clock) Option { return func(c *config) { c.clock = clock } }

// WithLogger sets the logger. Default logr.Discard(). Lock values are never logged.
func WithLogger(l logr.Logger) Option { return func(c *config) { c.logger = l } }

// WithMetrics registers the redlease_lock_* metrics with r. Default: no
// metrics. Several Lockers may share one registerer.
func WithMetrics(r prometheus.Registerer) Option { return func(c *config) { c.registerer = r } }

// WithTracerProvider makes OpenTelemetry spans with tp: one per Acquire
// and TryAcquire (a child of the span in its context, with an event per
// attempt and how the lease came), one per failed renewal and one per lost
// lease, each linked to its lease's acquire span (pkg/lock/tracing.go
// names them and their attributes; no lock value is ever in one). The
// library depends on the OpenTelemetry API only: bring the SDK and
// exporter. Default: none, at no cost.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tracer = tp } }

func (c *config) validate() error {
	if c.renewInterval == 0 {
		c.renewInterval = DefaultRenewInterval(c.ttl)
	}
	switch {
	case c.ttl < minTTL:
		return invalidConfig("ttl %v is below %v", c.ttl, minTTL)
	case c.renewInterval <= 0 || c.renewInterval >= c.ttl:
		return invalidConfig("renew interval %v must be positive and shorter than ttl %v", c.renewInterval, c.ttl)
	case c.driftFactor < 0 || c.driftFactor >= 0.5:
		return invalidConfig("drift factor %v is outside [0, 0.5)", c.driftFactor)
	case c.drift() >= c.ttl:
		return invalidConfig("ttl %v leaves no validity after the drift allowance %v", c.ttl, c.drift())
	case 2*c.renewInterval > c.ttl-c.drift():
		// The first renewal is sent one interval after the acquisition and
		// must come back before the validity (ttl - drift) ends: at most
		// half of it leaves a renewal round trip as much time as the wait.
		return invalidConfig("renew interval %v leaves no room for a renewal: it must be at most (ttl %v - drift %v) / 2 = %v",
			c.renewInterval, c.ttl, c.drift(), (c.ttl-c.drift())/2)
	case c.maxHold != 0 && c.maxHold < c.ttl:
		return invalidConfig("max hold %v is shorter than ttl %v", c.maxHold, c.ttl)
	case c.backoffMin <= 0 || c.backoffMax < c.backoffMin:
		return invalidConfig("retry backoff [%v, %v] is not a positive range", c.backoffMin, c.backoffMax)
	case c.replicaAcks < 0:
		return invalidConfig("replica acks %d is negative", c.replicaAcks)
	case c.replicaAcks > 0 && c.replicaWait <= 0:
		return invalidConfig("replica ack timeout %v must be positive", c.replicaWait)
	case c.nodeTimeout < 0 || c.nodeTimeout >= c.ttl:
		return invalidConfig("node timeout %v must be shorter than ttl %v", c.nodeTimeout, c.ttl)
	}
	return c.validateParts()
}

// validateParts checks what validate's timings leave: the parts a Locker
// is given (clock, identity, Functions, quarantine).
func (c *config) validateParts() error {
	switch {
	case c.clock == nil:
		return invalidConfig("nil clock")
	case !knownFunctions(c.functions):
		return invalidConfig("unknown Functions %d", c.functions)
	case c.quarantine.Cutoff < 0:
		return invalidConfig("failover quarantine cutoff %v is negative", c.quarantine.Cutoff)
	}
	return invalid(protocol.ValidateIdentity(c.identity))
}

// handoffWindow is how long a released key waits for the waiter it was
// handed to: protocol.HandoffWindow, at most the TTL.
func (c *config) handoffWindow() time.Duration { return min(c.ttl, protocol.HandoffWindow) }

// place is how long a waiter's place in the line is kept: a waiter tries
// again at least every TTL (waitBound), so two TTLs and a hand-off window
// keep a live waiter's place through one lost attempt.
func (c *config) place() time.Duration { return 2*c.ttl + c.handoffWindow() }

// drift is the validity set aside for clock drift: ttl × factor + 2ms.
func (c *config) drift() time.Duration {
	return driftOf(c.ttl, c.driftFactor)
}

func (c *config) nodeTimeoutFor() time.Duration {
	if c.nodeTimeout > 0 {
		return c.nodeTimeout
	}
	return min(max(c.ttl/10, 5*time.Millisecond), time.Second)
}

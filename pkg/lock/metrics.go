package lock

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the redlease_lock_* series. Labels are bounded enums: keys and
// identities are never labels (their number is unbounded).
type metrics struct {
	acquireSeconds *prometheus.HistogramVec // result
	held           prometheus.Gauge
	holdSeconds    prometheus.Histogram
	renewals       *prometheus.CounterVec // result
	lost           *prometheus.CounterVec // reason
	keysWithoutTTL prometheus.Counter
	messages       *prometheus.CounterVec // kind
	quarantined    prometheus.Counter
	mixedTTLs      prometheus.Counter
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		acquireSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redlease_lock_acquire_duration_seconds",
			Help:    "Time spent in Acquire/TryAcquire, waiting included, by result (acquired, not_acquired, error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"result"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redlease_lock_leases_held",
			Help: "Leases currently held by this process.",
		}),
		holdSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "redlease_lock_hold_duration_seconds",
			Help:    "How long leases were held, from the acquire request to their end.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlease_lock_renewals_total",
			Help: "Lease renewals by result (ok, not_owner, error).",
		}, []string{"result"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlease_lock_leases_lost_total",
			Help: "Leases that ended without Release, by reason (deadline, not_owner, max_hold).",
		}, []string{"reason"}),
		keysWithoutTTL: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "redlease_lock_keys_without_ttl_total",
			Help: "Acquire calls that found their key held without a TTL (not written by redlease): they back off until it is deleted.",
		}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlease_lock_messages_received_total",
			Help: "Messages received on the keys' events and waiter channels, by kind (granted, released, acquired): each woke this process.",
		}, []string{"kind"}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "redlease_lock_quarantined_attempts_total",
			Help: "Acquire attempts a failover quarantine held back (WithFailoverQuarantine): the key's server changed, and grants wait until the old server's leases have ended.",
		}),
		mixedTTLs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "redlease_lock_mixed_ttl_attempts_total",
			Help: "Acquire attempts (under WithFailoverQuarantine) that found the key's epoch record holding another TTL than this Locker's: the quarantine assumes one TTL per key.",
		}),
	}
	if r == nil {
		return m, nil
	}
	var err error
	m.acquireSeconds = register(r, m.acquireSeconds, &err)
	m.held = register(r, m.held, &err)
	m.holdSeconds = register(r, m.holdSeconds, &err)
	m.renewals = register(r, m.renewals, &err)
	m.lost = register(r, m.lost, &err)
	m.keysWithoutTTL = register(r, m.keysWithoutTTL, &err)
	m.messages = register(r, m.messages, &err)
	m.quarantined = register(r, m.quarantined, &err)
	m.mixedTTLs = register(r, m.mixedTTLs, &err)
	return m, err
}

// register registers c, or returns the collector already registered under
// its name so that several Lockers can share one registry.
func register[C prometheus.Collector](r prometheus.Registerer, c C, errp *error) C {
	err := r.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil && *errp == nil {
		*errp = invalidConfig("registering metrics: %v", err)
	}
	return c
}

func (m *metrics) observeAcquire(d time.Duration, err error) {
	result := "acquired"
	switch {
	case errors.Is(err, ErrNotAcquired):
		result = "not_acquired"
	case err != nil:
		result = "error"
	}
	m.acquireSeconds.WithLabelValues(result).Observe(d.Seconds())
}

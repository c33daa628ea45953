package election

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// DefaultRecordTTLFactor is the TTL of a ResourceLock's key, in lease
// durations, when WithRecordTTLFactor is not given.
const DefaultRecordTTLFactor = 10

// recordResource names the record in the Kubernetes-style errors that
// client-go's LeaderElector inspects (IsNotFound, IsConflict).
var recordResource = schema.GroupResource{Group: "redlease.io", Resource: "leaderelectionrecords"}

// ResourceLock is client-go's resourcelock.Interface on one Redis key, for
// client-go's leaderelection.LeaderElector and for controller-runtime
// managers (manager.Options.LeaderElectionResourceLockInterface).
//
// The key holds client-go's LeaderElectionRecord as JSON, with its times
// written to the microsecond so that every renewal changes the record
// (client-go measures a lease from the moment it sees the record change).
// Create writes only if the key is absent (SET NX); Update writes only if the
// stored record is byte for byte the one this lock last read or wrote (a
// script), as client-go's LeaseLock does with the Lease's resourceVersion.
// Missing records and lost races come back as the Kubernetes API errors
// client-go expects (NotFound, AlreadyExists, Conflict).
//
// Every write sets the key's TTL to the record's lease duration (at least
// 1s) times the TTL factor, so a key outlives every lease it records by far
// and still does not stay forever once the candidates are gone. Expiry of
// leadership itself is client-go's: it compares renewals with each
// candidate's clock, and hands out no fencing tokens.
//
// A ResourceLock is used by one LeaderElector; its methods are safe for
// concurrent use.
type ResourceLock struct {
	client    redis.UniversalClient
	key       string
	identity  string
	ttlFactor int
	recorder  resourcelock.EventRecorder
	subject   runtime.Object
	log       logr.Logger
	// calls runs the record's compare-and-set: a function of the redlease
	// library where the server has it, else EVALSHA.
	calls *protocol.Caller

	mu   sync.Mutex
	last []byte // the record last read or written; nil before Get or Create
}

var _ resourcelock.Interface = (*ResourceLock)(nil)

// ResourceLockOption configures a ResourceLock.
type ResourceLockOption func(*ResourceLock)

// WithRecordTTLFactor sets the key's TTL to factor times the record's lease
// duration (at least 1s), refreshed on every write. Default
// DefaultRecordTTLFactor (10); at least 2.
func WithRecordTTLFactor(factor int) ResourceLockOption {
	return func(l *ResourceLock) { l.ttlFactor = factor }
}

// WithEventRecorder makes RecordEvent emit a Normal "LeaderElection" Event
// about subject (for example the Pod or Deployment of the candidates), as
// client-go's LeaseLock does about its Lease. Default: no Events.
func WithEventRecorder(recorder resourcelock.EventRecorder, subject runtime.Object) ResourceLockOption {
	return func(l *ResourceLock) { l.recorder, l.subject = recorder, subject }
}

// WithLogger sets the logger that RecordEvent writes to. Default: none.
func WithLogger(log logr.Logger) ResourceLockOption {
	return func(l *ResourceLock) { l.log = log }
}

// NewResourceLock returns a resource lock on key for the candidate identity.
// It does no I/O; bad arguments fail with an error matching
// lock.ErrInvalidConfig.
func NewResourceLock(client redis.UniversalClient, key, identity string, opts ...ResourceLockOption) (*ResourceLock, error) {
	l := &ResourceLock{client: client, key: key, identity: identity, ttlFactor: DefaultRecordTTLFactor, calls: protocol.NewCaller(protocol.FunctionsAuto)}
	for _, o := range opts {
		o(l)
	}
	switch {
	case client == nil:
		return nil, invalid("nil redis client")
	case l.ttlFactor < 2:
		return nil, invalid("record TTL factor %d is below 2", l.ttlFactor)
	case l.recorder != nil && l.subject == nil:
		return nil, invalid("an event recorder needs a subject")
	}
	if err := lock.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	if err := protocol.ValidateIdentity(identity); err != nil {
		return nil, invalid("%v", err)
	}
	return l, nil
}

// Get returns the stored record and its raw bytes (what client-go compares
// to notice renewals), or a NotFound API error when the key is absent.
func (l *ResourceLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	raw, err := l.client.Get(ctx, l.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil, apierrors.NewNotFound(recordResource, l.key)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("election: reading the record %q: %w", l.key, err)
	}
	var rec resourcelock.LeaderElectionRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, nil, fmt.Errorf("election: %q does not hold a leader election record: %w", l.key, err)
	}
	l.setLast(raw)
	return &rec, raw, nil
}

// Create writes ler if the key is absent, else fails with an AlreadyExists
// API error.
func (l *ResourceLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	raw, err := encodeRecord(ler)
	if err != nil {
		return err
	}
	ok, err := l.client.SetNX(ctx, l.key, raw, l.ttl(ler)).Result()
	if err != nil {
		return fmt.Errorf("election: creating the record %q: %w", l.key, err)
	}
	if !ok {
		return apierrors.NewAlreadyExists(recordResource, l.key)
	}
	l.setLast(raw)
	return nil
}

// Update replaces the record with ler if it is still the one this lock last
// read or wrote; otherwise it fails with a Conflict API error (NotFound when
// the key is gone). It fails without I/O before the first Get or Create.
func (l *ResourceLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	last := l.last
	l.mu.Unlock()
	if last == nil {
		return errors.New("election: record not initialized, call Get or Create first")
	}
	raw, err := encodeRecord(ler)
	if err != nil {
		return err
	}
	ttl := l.ttl(ler)
	update := protocol.Call{Script: protocol.ElectionRecordScript, Keys: []string{l.key}, Args: []any{last, raw, ttl.Milliseconds()}}
	n, err := l.calls.On(l.client).Run(ctx, update).Int()
	if err != nil {
		return fmt.Errorf("election: updating the record %q: %w", l.key, err)
	}
	switch n {
	case 1:
		l.setLast(raw)
		return nil
	case 0:
		return apierrors.NewNotFound(recordResource, l.key)
	default:
		return apierrors.NewConflict(recordResource, l.key, errors.New("the record changed since this lock last read it"))
	}
}

// RecordEvent logs the leader election event s ("became leader", "stopped
// leading") and, with WithEventRecorder, emits it as an Event.
func (l *ResourceLock) RecordEvent(s string) {
	l.log.Info("leader election", "lock", l.Describe(), "identity", l.identity, "event", s)
	if l.recorder != nil {
		l.recorder.Eventf(l.subject, corev1.EventTypeNormal, "LeaderElection", "%s %s", l.identity, s)
	}
}

// Identity returns the candidate's identity.
func (l *ResourceLock) Identity() string { return l.identity }

// Describe names the lock in client-go's logs: "redis:<key>".
func (l *ResourceLock) Describe() string { return "redis:" + l.key }

func (l *ResourceLock) setLast(raw []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = bytes.Clone(raw)
}

// ttl is the key's TTL for a write of ler.
func (l *ResourceLock) ttl(ler resourcelock.LeaderElectionRecord) time.Duration {
	return time.Duration(l.ttlFactor) * time.Duration(max(ler.LeaseDurationSeconds, 1)) * time.Second
}

// wireRecord is LeaderElectionRecord with microsecond times: the same JSON
// field names, readable into a LeaderElectionRecord (RFC 3339 accepts the
// fraction).
type wireRecord struct {
	HolderIdentity       string                                  `json:"holderIdentity"`
	LeaseDurationSeconds int                                     `json:"leaseDurationSeconds"`
	AcquireTime          metav1.MicroTime                        `json:"acquireTime"`
	RenewTime            metav1.MicroTime                        `json:"renewTime"`
	LeaderTransitions    int                                     `json:"leaderTransitions"`
	Strategy             coordinationv1.CoordinatedLeaseStrategy `json:"strategy"`
	PreferredHolder      string                                  `json:"preferredHolder"`
}

func encodeRecord(ler resourcelock.LeaderElectionRecord) ([]byte, error) {
	raw, err := json.Marshal(wireRecord{
		HolderIdentity:       ler.HolderIdentity,
		LeaseDurationSeconds: ler.LeaseDurationSeconds,
		AcquireTime:          metav1.NewMicroTime(ler.AcquireTime.Time),
		RenewTime:            metav1.NewMicroTime(ler.RenewTime.Time),
		LeaderTransitions:    ler.LeaderTransitions,
		Strategy:             ler.Strategy,
		PreferredHolder:      ler.PreferredHolder,
	})
	if err != nil {
		return nil, fmt.Errorf("election: encoding the record: %w", err)
	}
	return raw, nil
}

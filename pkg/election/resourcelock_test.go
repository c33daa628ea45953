package election_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/lock"
)

func TestNewResourceLockValidates(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	tests := []struct {
		name          string
		key, identity string
		opts          []election.ResourceLockOption
		want          string
	}{
		{"empty key", "", "me", nil, "empty key"},
		{"key with whitespace", "a b", "me", nil, "whitespace"},
		{"empty identity", "k", "", nil, "empty identity"},
		{"TTL factor below 2", "k", "me", []election.ResourceLockOption{election.WithRecordTTLFactor(1)}, "below 2"},
		{"recorder without subject", "k", "me", []election.ResourceLockOption{election.WithEventRecorder(&events{}, nil)}, "subject"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := election.NewResourceLock(client, tc.key, tc.identity, tc.opts...)
			if !errors.Is(err, lock.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewResourceLock = %v, want lock.ErrInvalidConfig containing %q", err, tc.want)
			}
		})
	}
	if _, err := election.NewResourceLock(nil, "k", "me"); !errors.Is(err, lock.ErrInvalidConfig) {
		t.Fatalf("nil client: %v", err)
	}
}

type events struct {
	mu   sync.Mutex
	msgs []string
}

func (e *events) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msgs = append(e.msgs, fmt.Sprintf("%T %s %s %s", obj, eventType, reason, fmt.Sprintf(message, args...)))
}

// TestResourceLockProtocol checks the resource lock's half of client-go's
// contract: NotFound, AlreadyExists and Conflict as API errors, compare-and-set
// against the record last read or written by this lock, microsecond times,
// a TTL of factor × lease duration refreshed on every write.
func TestResourceLockProtocol(t *testing.T) {
	srv := redistest.StartStandalone(t)
	admin := srv.Client(t)
	ctx := context.Background()
	const key = "rl"
	rec := &events{}
	a, err := election.NewResourceLock(srv.Client(t), key, "a", election.WithEventRecorder(rec, &metav1.PartialObjectMetadata{}), election.WithLogger(logr.Discard()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := election.NewResourceLock(srv.Client(t), key, "b", election.WithRecordTTLFactor(3))
	if err != nil {
		t.Fatal(err)
	}
	if a.Identity() != "a" || a.Describe() != "redis:"+key {
		t.Errorf("Identity, Describe = %q, %q", a.Identity(), a.Describe())
	}

	now := time.Now()
	ler := resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 2, AcquireTime: metav1.NewTime(now), RenewTime: metav1.NewTime(now)}
	checkResourceLockCreate(ctx, t, admin, key, a, b, ler)
	raw := checkResourceLockGet(ctx, t, b, now)
	checkResourceLockUpdate(ctx, t, admin, key, a, b, ler, raw)

	a.RecordEvent("became leader")
	if want := "*v1.PartialObjectMetadata Normal LeaderElection a became leader"; len(rec.msgs) != 1 || rec.msgs[0] != want {
		t.Errorf("events %q, want [%q]", rec.msgs, want)
	}
	b.RecordEvent("no recorder: only logged") // must not panic

	// A key that is not a record is an error, not a record.
	admin.Set(ctx, key, "not json", time.Minute)
	if _, _, err := a.Get(ctx); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("Get of a non-record = %v, want an error", err)
	}
}

// checkResourceLockCreate: before the record exists Get is NotFound and
// Update fails; a creates ler with a TTL of 10 × its lease duration, and b's
// Create of the same record is AlreadyExists.
func checkResourceLockCreate(ctx context.Context, t *testing.T, admin *redis.Client, key string, a, b *election.ResourceLock, ler resourcelock.LeaderElectionRecord) {
	t.Helper()
	if _, _, err := a.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing record = %v, want NotFound", err)
	}
	if err := a.Update(ctx, ler); err == nil {
		t.Fatal("Update before Get or Create succeeded")
	}
	if err := a.Create(ctx, ler); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if ttl := admin.PTTL(ctx, key).Val(); ttl <= 19*time.Second || ttl > 20*time.Second {
		t.Errorf("TTL after Create = %v, want 10 × 2s", ttl)
	}
	if err := b.Create(ctx, ler); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create = %v, want AlreadyExists", err)
	}
}

// checkResourceLockGet: b reads a's record, renewed at now, with microsecond
// times and client-go's JSON on the wire. It returns the raw record.
func checkResourceLockGet(ctx context.Context, t *testing.T, b *election.ResourceLock, now time.Time) []byte {
	t.Helper()
	got, raw, err := b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.HolderIdentity != "a" || got.LeaseDurationSeconds != 2 || !got.RenewTime.Time.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("Get = %+v (renew %v), want holder a, 2s, renewed at %v", got, got.RenewTime.Time, now.Truncate(time.Microsecond))
	}
	var wire map[string]any
	if err := json.Unmarshal(raw, &wire); err != nil || wire["holderIdentity"] != "a" {
		t.Errorf("raw record %s: %v", raw, err)
	}
	return raw
}

// checkResourceLockUpdate: compare-and-set against the record each lock
// last read or wrote. a created ler; b last read it as raw.
func checkResourceLockUpdate(ctx context.Context, t *testing.T, admin *redis.Client, key string, a, b *election.ResourceLock, ler resourcelock.LeaderElectionRecord, raw []byte) {
	t.Helper()
	// A renewal within the same second changes the raw record (client-go
	// notices renewals by comparing raw records).
	renewed := ler
	renewed.RenewTime = metav1.NewTime(ler.RenewTime.Add(time.Millisecond))
	if err := a.Update(ctx, renewed); err != nil {
		t.Fatalf("Update by the lock that created the record: %v", err)
	}
	_, raw2, err := a.Get(ctx)
	if err != nil || string(raw2) == string(raw) {
		t.Errorf("a renewal 1ms later left the raw record unchanged (%s) or failed: %v", raw2, err)
	}
	// b last read the record before that renewal: its update conflicts.
	taken := renewed
	taken.HolderIdentity = "b"
	if err := b.Update(ctx, taken); !apierrors.IsConflict(err) {
		t.Fatalf("Update from a stale read = %v, want Conflict", err)
	}
	// After reading again it succeeds, with b's TTL factor; a is now stale.
	if _, _, err := b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(ctx, taken); err != nil {
		t.Fatalf("Update after Get: %v", err)
	}
	if ttl := admin.PTTL(ctx, key).Val(); ttl <= 5*time.Second || ttl > 6*time.Second {
		t.Errorf("TTL after b's Update = %v, want 3 × 2s", ttl)
	}
	if err := a.Update(ctx, renewed); !apierrors.IsConflict(err) {
		t.Fatalf("Update over someone else's write = %v, want Conflict", err)
	}
	// A record that vanished is NotFound for Update too.
	admin.Del(ctx, key)
	if err := b.Update(ctx, taken); !apierrors.IsNotFound(err) {
		t.Fatalf("Update of a deleted record = %v, want NotFound", err)
	}
}

// TestLeaderElectorOnResourceLock runs client-go's own LeaderElector with the
// Redis resource lock: of two electors one leads; cancelled with
// ReleaseOnCancel, it hands over to the other.
func TestLeaderElectorOnResourceLock(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const key = "client-go"
	started := make(chan string, 4)
	type elector struct {
		cancel context.CancelFunc
		done   chan struct{}
		leader chan string
	}
	run := func(id string) *elector {
		rl, err := election.NewResourceLock(srv.Client(t), key, id)
		if err != nil {
			t.Fatal(err)
		}
		e := &elector{done: make(chan struct{}), leader: make(chan string, 8)}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            rl,
			LeaseDuration:   2 * time.Second,
			RenewDeadline:   time.Second,
			RetryPeriod:     100 * time.Millisecond,
			ReleaseOnCancel: true,
			Name:            id,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					started <- id
					<-ctx.Done()
				},
				OnStoppedLeading: func() {},
				OnNewLeader:      func(l string) { e.leader <- l },
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ctx context.Context
		ctx, e.cancel = context.WithCancel(context.Background())
		go func() {
			defer close(e.done)
			le.Run(ctx)
		}()
		t.Cleanup(func() {
			e.cancel()
			<-e.done
		})
		return e
	}
	electors := map[string]*elector{"a": run("a")}
	if first := recv(t, started, 5*time.Second, "a leader"); first != "a" {
		t.Fatalf("first leader %q", first)
	}
	electors["b"] = run("b")
	if l := recv(t, electors["b"].leader, 5*time.Second, "b observing the leader"); l != "a" {
		t.Fatalf("b observed %q, want a", l)
	}
	select {
	case id := <-started:
		t.Fatalf("%s leads while a renews", id)
	case <-time.After(2500 * time.Millisecond): // more than the lease duration
	}
	cancelled := time.Now()
	electors["a"].cancel()
	<-electors["a"].done
	if next := recv(t, started, 5*time.Second, "b taking over"); next != "b" {
		t.Fatalf("next leader %q", next)
	}
	took := time.Since(cancelled)
	t.Logf("client-go LeaderElector on the Redis resource lock: hand-over after ReleaseOnCancel in %v (RetryPeriod 100ms)", round(took))
	if took > 2*time.Second {
		t.Errorf("hand-over took %v, want well under the 2s lease duration after a release", took)
	}
	rl, _ := election.NewResourceLock(srv.Client(t), key, "reader")
	rec, _, err := rl.Get(context.Background())
	if err != nil || rec.HolderIdentity != "b" || rec.LeaderTransitions != 1 {
		t.Errorf("record %+v, err %v: want held by b after 1 transition", rec, err)
	}
}

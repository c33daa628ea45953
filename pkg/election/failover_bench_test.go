package election_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
)

// Failover parameters of the side-by-side measurement: a 2s lease for both.
const (
	benchTTL           = 2 * time.Second         // election.Run
	benchLeaseDuration = 2 * time.Second         // client-go
	benchRenewDeadline = 1500 * time.Millisecond // client-go
	benchRetryPeriod   = 500 * time.Millisecond  // client-go
)

// BenchmarkFailover measures the time from stopping the leader to the next
// leader's OnStartedLeading, with one standby candidate, for election.Run on
// Redis and for client-go's LeaderElector on a Lease of the envtest API
// server (and, for comparison, on this package's Redis resource lock):
//
//   - crash: the leader stops renewing without releasing (cancelled with
//     ReleaseOnCancel false), which is what the others see of a SIGKILL;
//     TestCrashedAndPausedLeaders covers a real SIGKILL;
//   - release: the leader is cancelled with ReleaseOnCancel.
//
// Each iteration is one failover, at a random moment between two renewals.
// A crash costs about a lease duration, so run it with a fixed count:
//
//	go test -run '^$' -bench Failover -benchtime 10x ./pkg/election/
//
// It reports min, p50 and max in ms, and logs the distribution.
func BenchmarkFailover(b *testing.B) {
	klog.SetLogger(logr.Discard()) // client-go's election logs every attempt
	for _, mode := range []string{"crash", "release"} {
		release := mode == "release"
		b.Run("election.Run/"+mode, func(b *testing.B) {
			srv := redistest.StartStandalone(b)
			key := benchName("run")
			measureFailover(b, benchTTL/3, func(ctx context.Context, id string, started func(), observed func(string)) {
				_ = election.Run(ctx, election.Config{
					Client: srv.Client(b), Key: key, Identity: id, TTL: benchTTL, ReleaseOnCancel: release,
					Callbacks: election.Callbacks{
						OnStartedLeading: func(ctx context.Context, _ uint64) { started(); <-ctx.Done() },
						OnNewLeader:      observed,
					},
				})
			})
		})
		b.Run("client-go-Lease/"+mode, func(b *testing.B) {
			env := kubetest.Shared(b)
			ns, name := env.Namespace(b), benchName("lease")
			measureFailover(b, benchRetryPeriod, func(ctx context.Context, id string, started func(), observed func(string)) {
				cs, err := kubernetes.NewForConfig(env.Config)
				if err != nil {
					panic(err)
				}
				runClientGo(ctx, &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
					Client:     cs.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: id},
				}, release, started, observed)
			})
		})
		b.Run("client-go-RedisResourceLock/"+mode, func(b *testing.B) {
			srv := redistest.StartStandalone(b)
			key := benchName("rl")
			measureFailover(b, benchRetryPeriod, func(ctx context.Context, id string, started func(), observed func(string)) {
				rl, err := election.NewResourceLock(srv.Client(b), key, id)
				if err != nil {
					panic(err)
				}
				runClientGo(ctx, rl, release, started, observed)
			})
		})
	}
}

var benchSeq atomic.Int64

func benchName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, benchSeq.Add(1)) }

func runClientGo(ctx context.Context, lock resourcelock.Interface, release bool, started func(), observed func(string)) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   benchLeaseDuration,
		RenewDeadline:   benchRenewDeadline,
		RetryPeriod:     benchRetryPeriod,
		ReleaseOnCancel: release,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { started(); <-ctx.Done() },
			OnStoppedLeading: func() {},
			OnNewLeader:      observed,
		},
	})
	if err != nil {
		panic(err)
	}
	le.Run(ctx)
}

// candidateFunc runs one candidate until ctx ends, calling started when it
// becomes leader and observed with every leader it sees.
type candidateFunc func(ctx context.Context, id string, started func(), observed func(leader string))

// measureFailover keeps a leader and one standby; each iteration waits until
// the standby has seen the leader, waits a random part of phase (so the stop
// falls anywhere between two renewals), stops the leader and times the
// standby's takeover; then starts a fresh standby (with a fresh identity:
// client-go treats a record holding its own identity as its own lease).
func measureFailover(b *testing.B, phase time.Duration, run candidateFunc) {
	type started struct {
		id string
		at time.Time
	}
	type candidate struct {
		cancel context.CancelFunc
		done   chan struct{}
		seen   chan string
	}
	leaders := make(chan started, 4)
	cands := map[string]*candidate{}
	var n int
	spawn := func() string {
		n++
		id := fmt.Sprintf("c%d", n)
		ctx, cancel := context.WithCancel(context.Background())
		c := &candidate{cancel: cancel, done: make(chan struct{}), seen: make(chan string, 64)}
		go func() {
			defer close(c.done)
			run(ctx, id, func() { leaders <- started{id, time.Now()} }, func(l string) {
				select {
				case c.seen <- l:
				default:
				}
			})
		}()
		cands[id] = c
		return id
	}
	defer func() {
		for _, c := range cands {
			c.cancel()
			<-c.done
		}
	}()
	spawn()
	leader := recv(b, leaders, 30*time.Second, "the first leader")
	standby := spawn()

	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		for l := ""; l != leader.id; {
			l = recv(b, cands[standby].seen, 30*time.Second, "the standby seeing the leader")
		}
		time.Sleep(rand.N(phase)) //nolint:gosec // G404: a random point in the renewal cycle; timing needs no cryptographic randomness
		stopped := time.Now()
		old := cands[leader.id]
		old.cancel()
		next := recv(b, leaders, 30*time.Second, "the next leader")
		took = append(took, next.at.Sub(stopped))
		if next.id != standby {
			b.Fatalf("%s took over, want the standby %s", next.id, standby)
		}
		<-old.done
		delete(cands, leader.id)
		leader, standby = next, spawn()
	}
	b.StopTimer()
	s := slices.Clone(took)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[0]), "min-ms")
	b.ReportMetric(ms(quantile(s, 0.5)), "p50-ms")
	b.ReportMetric(ms(s[len(s)-1]), "max-ms")
	b.Logf("failover: %s", summary(took))
}

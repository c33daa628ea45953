package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
)

// TestManagerElectsOnRedis runs two controller-runtime managers against a
// real API server whose leader election uses the Redis resource lock
// (LeaderElectionResourceLockInterface): one is elected, the other is not
// until the first stops with LeaderElectionReleaseOnCancel.
func TestManagerElectsOnRedis(t *testing.T) {
	env := kubetest.Shared(t)
	srv := redistest.StartStandalone(t)
	const key = "manager-leader"
	type mgr struct {
		m      manager.Manager
		cancel context.CancelFunc
		done   chan struct{}
		err    error // Start's result, once done is closed
	}
	startManager := func(id string) *mgr {
		rl, err := election.NewResourceLock(srv.Client(t), key, id)
		if err != nil {
			t.Fatal(err)
		}
		lease, renew, retry := 2*time.Second, time.Second, 200*time.Millisecond
		m, err := manager.New(env.Config, manager.Options{
			Scheme:                              env.Scheme,
			Logger:                              logr.Discard(),
			Metrics:                             metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress:              "0",
			LeaderElection:                      true,
			LeaderElectionResourceLockInterface: rl,
			LeaderElectionReleaseOnCancel:       true,
			LeaseDuration:                       &lease,
			RenewDeadline:                       &renew,
			RetryPeriod:                         &retry,
		})
		if err != nil {
			t.Fatalf("manager.New: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &mgr{m: m, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			r.err = m.Start(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-r.done:
				if r.err != nil {
					t.Errorf("manager %s: Start = %v, want nil after its context was cancelled", id, r.err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("manager %s did not stop", id)
			}
		})
		return r
	}

	a := startManager("manager-a")
	recv(t, a.m.Elected(), 20*time.Second, "manager-a elected")
	b := startManager("manager-b")
	select {
	case <-b.m.Elected():
		t.Fatal("manager-b elected while manager-a leads")
	case <-time.After(2500 * time.Millisecond): // more than the lease duration
	}
	a.cancel()
	recv(t, a.done, 30*time.Second, "manager-a stopping")
	if a.err != nil {
		t.Errorf("manager-a: Start = %v, want nil after its context was cancelled", a.err)
	}
	recv(t, b.m.Elected(), 10*time.Second, "manager-b elected after manager-a released")

	rl, err := election.NewResourceLock(srv.Client(t), key, "reader")
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := rl.Get(context.Background())
	if err != nil || rec.HolderIdentity != "manager-b" {
		t.Errorf("record %+v, err %v: want held by manager-b", rec, err)
	}
}

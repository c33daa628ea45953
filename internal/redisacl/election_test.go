/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/fence"
)

// TestTenantRunsElectionAndFencedWrites: what the library builds on the lock
// also runs as a tenant, under the tenant's own keys. Two candidates of
// pkg/election campaign for team-a's key (the follower watches the leader
// through its observer's transaction); the leader writes with its fence
// through pkg/fence's Redis store; client-go's resource lock on Redis
// creates, reads and updates its record. No node logs an ACL denial.
//
// With functionsOnly the library is loaded and the tenant may not run
// scripts: everything goes through FCALL.
func TestTenantRunsElectionAndFencedWrites(t *testing.T) {
	for _, functionsOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "scripts and functions", true: "functions only"}[functionsOnly], func(t *testing.T) {
			t.Parallel()
			runTenantElection(t, functionsOnly)
		})
	}
}

func runTenantElection(t *testing.T, functionsOnly bool) {
	ctx := testContext(t)
	s := redistest.StartStandalone(t)
	if functionsOnly {
		loadLibrary(ctx, t, []*redistest.Server{s})
	}
	pw := redisacl.NewPassword()
	user := provision(ctx, t, []*redistest.Server{s}, "team-a", protocol.ACLOptions{FunctionsOnly: functionsOnly}, redisacl.Passwords{Current: pw})
	resetACLLog(ctx, t, []*redistest.Server{s})

	runCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	wrote := make(chan error, 1)
	followerSaw := make(chan string, 4)
	var wg sync.WaitGroup
	for _, id := range []string{"leader", "follower"} {
		wg.Go(func() {
			client := tenantClient(t, s, user, pw)
			store := fence.NewRedisStore(client, "team-a/")
			_ = election.Run(runCtx, election.Config{
				Client: client, Key: "team-a/leader", Identity: id, TTL: 5 * time.Second, ReleaseOnCancel: true,
				Callbacks: election.Callbacks{
					OnStartedLeading: func(ctx context.Context, token uint64) {
						err := store.Write(ctx, "ledger", token, id)
						if err == nil {
							_, _, err = store.Read(ctx, "ledger")
						}
						wrote <- err
						<-ctx.Done()
					},
					OnNewLeader: func(leader string) {
						if id == "follower" {
							followerSaw <- leader
						}
					},
				},
			})
		})
		if id == "leader" {
			time.Sleep(500 * time.Millisecond) // the leader campaigns first
		}
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("the leader's fenced write as a tenant: %v", err)
		}
	case <-runCtx.Done():
		t.Fatal("nobody led within 20s")
	}
	select {
	case got := <-followerSaw:
		if got != "leader" {
			t.Errorf("the follower saw leader %q, want leader", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the follower never reported the leader")
	}
	stop()
	wg.Wait()

	rl, err := election.NewResourceLock(tenantClient(t, s, user, pw), "team-a/manager", "manager-0")
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now())
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "manager-0", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
	if err := rl.Create(ctx, rec); err != nil {
		t.Fatalf("resource lock Create as a tenant: %v", err)
	}
	if _, _, err := rl.Get(ctx); err != nil {
		t.Fatalf("resource lock Get as a tenant: %v", err)
	}
	rec.RenewTime = metav1.NewTime(time.Now())
	if err := rl.Update(ctx, rec); err != nil {
		t.Fatalf("resource lock Update as a tenant: %v", err)
	}
	requireNoDenials(ctx, t, []*redistest.Server{s})
}

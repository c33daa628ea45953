package chaos

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/fence"
)

// Leader election with a paused leader: the leader process is SIGSTOPped
// while it prepares a write; a standby is elected and writes; the old
// leader resumes and makes the write it prepared. The fence refuses it
// (S2) and no increment is lost (S4). The naive counterpart is
// TestHolderPausedPastItsTTL's.
//
// S1 is not checked here: a paused process cannot act on its deadline until
// it runs again, so its own view of leadership ends only after it resumes.
// That window is exactly what fencing exists for.
func TestElectionWithAPausedLeader(t *testing.T) {
	srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
	s := newScenario(t, time.Minute, false)
	ctx := s.ctx
	const ttl = 500 * time.Millisecond
	old := s.pausedHelper("paused-leader", map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": "leader", "TTL": ttl.String()})

	fs := fence.NewRedisStore(storeSrv.Client(t), "")
	elected := make(chan struct{})
	standbyCtx, stopStandby := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- election.Run(standbyCtx, election.Config{Client: srv.Client(t), Key: "leader", Identity: "standby", TTL: ttl, ReleaseOnCancel: true,
			Callbacks: election.Callbacks{OnStartedLeading: func(lctx context.Context, token uint64) {
				from := Mono()
				_, v, _ := fs.Read(lctx, "ledger")
				n, _ := strconv.Atoi(v)
				err := fs.Write(lctx, "ledger", token, strconv.Itoa(n+1))
				s.h.Write(Write{Client: "standby", Resource: "ledger", Fence: token, At: Mono(), Accepted: err == nil})
				close(elected)
				<-lctx.Done()
				s.h.Claim(Claim{Client: "standby", Key: "leader", Fence: token, From: from, Until: Mono()})
			}}})
	}()
	select {
	case <-elected:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby was not elected while the leader was paused")
	}
	late := s.resume(old) // its claim is recorded, but S1 is not checked: see above
	stopStandby()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, counter, _ := fs.Read(ctx, "ledger")
	expectClean(t, "S2", StaleAccepted(s.h.Writes()))
	expectClean(t, "S4", LostUpdates(s.h.Writes(), counter))
	if late.Accepted {
		t.Fatal("the deposed leader's late write was accepted")
	}
}

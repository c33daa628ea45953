package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// startTestAgent runs lockctl's agent (built from this tree unless
// $REDLEASE_LOCKCTL names one) on the tests' server; the test's end stops
// it.
func startTestAgent(t *testing.T) *Agent {
	t.Helper()
	lockctl, err := Lockctl(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, err := StartAgent(lockctl, singleServer(t).Addr, "--ttl", benchTTL.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestAgentRows: the uncontended rows through the agent complete cycles
// on both protocols and see the agent's CPU.
func TestAgentRows(t *testing.T) {
	a := startTestAgent(t)
	for _, lib := range AgentLibs(a) {
		r, err := Uncontended(t.Context(), lib, 2, 300*time.Millisecond, keyName("agent:u:", lib.Name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 || r.AgentCPU <= 0 {
			t.Errorf("%s: %d cycles, agent CPU %v; want both", lib.Name, r.Ops, r.AgentCPU)
		}
	}
}

// TestAgentWaitingLocks: the waiting lock functions of the processes rows
// (streamed Acquire, AcquireLease) hand one key on with no overlap and no
// error, here through one agent shared by the workers; and a release lets
// the next one in long before the lease's TTL.
func TestAgentWaitingLocks(t *testing.T) {
	a := startTestAgent(t)
	for _, tc := range []struct {
		name string
		lib  *Lib
	}{
		{"stream", agentLib(agentStreamLock(a.Client(GRPC)))},
		{"unary", agentLib(agentWaitLock(a.Client(JSON)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Contended(context.Background(), tc.lib, 3, time.Millisecond, 5*time.Second, 12, keyName("agent:h:", tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if r.Ops != 12 || r.Overlaps != 0 || r.Errors != 0 {
				t.Errorf("ops %d (want 12), overlaps %d, errors %d", r.Ops, r.Overlaps, r.Errors)
			}
		})
	}
}

// TestAgentStreamLockGivesUpWithItsContext: a wait that its context ends
// returns an error and leaves nothing held or queued.
func TestAgentStreamLockGivesUpWithItsContext(t *testing.T) {
	a := startTestAgent(t)
	lockf := agentStreamLock(a.Client(GRPC))
	release, err := lockf(t.Context(), "agent:giveup")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := lockf(ctx, "agent:giveup"); err == nil {
		t.Fatal("a second holder got a held lock")
	}
	if err := release(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second) // far below the TTL
	defer cancel()
	again, err := lockf(ctx, "agent:giveup")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	_ = again(t.Context())
}

func agentLib(f LockFunc) *Lib {
	return &Lib{Name: "agent", Family: FamilyAgent, worker: func(int) LockFunc { return f }}
}

// TestHopFloorCrossesTheUnixSocket: the hop floor's cycles are PINGs that
// reach the server over its Unix socket, two per cycle.
func TestHopFloorCrossesTheUnixSocket(t *testing.T) {
	srv := singleServer(t)
	c := srv.Client(1)
	defer func() { _ = c.Close() }()
	pings := func() int64 {
		info, err := srv.Info(t.Context(), c, "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		var calls int64
		_, _ = fmt.Sscanf(info["cmdstat_ping"], "calls=%d", &calls)
		return calls
	}
	lib := HopFloor(srv.Socket)
	defer lib.Close()
	before := pings()
	r, err := Uncontended(t.Context(), lib, 1, 100*time.Millisecond, "hop")
	if err != nil {
		t.Fatal(err)
	}
	if got := pings() - before; r.Ops == 0 || got < 2*int64(r.Ops) {
		t.Errorf("%d cycles, %d PINGs; want two per cycle", r.Ops, got)
	}
}

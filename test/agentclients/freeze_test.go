package agentclients_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Python example holds through AcquireLease with keep-alives every
// third of its 2s period and is frozen (SIGSTOP) while it holds: with no
// keep-alive for the period, the agent releases its lease, and a Node
// waiter gets the lock within the period plus the TTL. Thawed, the frozen
// writer's late write is refused: its fence is below the waiter's in the
// ledger (or its KeepAlive told it first that the lease ended).
func TestAFrozenKeepAliveClientLosesItsLeaseAndItsLateWrite(t *testing.T) {
	const (
		lockName = "report"
		period   = 2 * time.Second
		ttl      = 2 * time.Second
		slack    = 3 * time.Second
	)
	a := startAgent(t, ttl)
	ledger := filepath.Join(t.TempDir(), "ledger")
	startWaiter := nodeExample.prepare(t, a, lockName, ledger, 1) // npm ci first: the holder's work is short
	frozen := pythonExample.run(t, a, lockName, ledger, 1, "KEEP_ALIVE_SECONDS=2", "WORK_SECONDS=8")
	held := frozen.waitLine(t, "acquired fence ", time.Minute)
	waiter := startWaiter()
	a.waitForWaiters(t, lockName, 1)

	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	got := waiter.waitLine(t, "fence ", time.Minute)
	if took := got.at.Sub(stopped); took > period+ttl+slack {
		t.Errorf("the waiter got the lock %v after the holder froze, want within its keep-alive period %v + TTL %v (+%v)", took, period, ttl, slack)
	} else {
		t.Logf("the waiter got the lock %v after the holder froze (period %v, TTL %v)", took, period, ttl)
	}
	waiter.succeed(t, time.Minute)

	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-frozen.done:
	case <-time.After(time.Minute):
		t.Fatal("the thawed writer did not finish within a minute")
	}
	refused := strings.Contains(frozen.stderr.String(), "refused: fence") || strings.Contains(frozen.stderr.String(), "the lease ended")
	if code := frozen.cmd.ProcessState.ExitCode(); code == 0 || !refused {
		t.Fatalf("the thawed writer exited %d; stderr:\n%s\nwant its late write refused", code, frozen.stderr)
	}
	entries := readLedger(t, ledger)
	frozenFence, _ := strconv.ParseUint(strings.TrimPrefix(held.text, "acquired fence "), 10, 64)
	if len(entries) != 1 || entries[0].fence <= frozenFence {
		t.Fatalf("the ledger %v: want only the waiter's write, with a fence above the frozen writer's %d", entries, frozenFence)
	}
}

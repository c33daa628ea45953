package agentclients_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The Node example holds through the streamed Acquire and is SIGKILLed
// while it holds; the Python example waiting with AcquireLease gets the
// lock well within the 30s TTL: the dead client's connection closed its
// stream and the agent released at once. The waiter's write then goes
// through with a higher fence.
func TestAKilledStreamingHolderHandsTheLockOnAtOnce(t *testing.T) {
	const (
		lockName = "report"
		ttl      = 30 * time.Second
		handOff  = 5 * time.Second
	)
	a := startAgent(t, ttl)
	ledger := filepath.Join(t.TempDir(), "ledger")

	holder := nodeExample.run(t, a, lockName, ledger, 1, "HOLD_MS=600000")
	holder.waitLine(t, "fence ", time.Minute)
	waiter := pythonExample.run(t, a, lockName, ledger, 1)
	a.waitForWaiters(t, lockName, 1)

	killed := time.Now()
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := waiter.waitLine(t, "fence ", ttl)
	if took := got.at.Sub(killed); took > handOff {
		t.Errorf("the waiter got the lock %v after the holder died, want under %v (the TTL is %v): the agent did not release on the closed stream", took, handOff, ttl)
	} else {
		t.Logf("the waiter got the lock %v after the holder died", took)
	}
	waiter.succeed(t, time.Minute)

	entries := readLedger(t, ledger)
	checkLedger(t, entries)
	if len(entries) != 2 {
		t.Fatalf("the ledger took %d writes, want the holder's and the waiter's", len(entries))
	}
}

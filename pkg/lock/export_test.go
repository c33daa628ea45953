package lock

import "testing"

// SetHandOffHook installs f as the hand-off hook for the rest of t.
func SetHandOffHook(t testing.TB, f func(counted, started bool)) {
	prev := testHookHandOff
	t.Cleanup(func() { testHookHandOff = prev })
	testHookHandOff = f
}

// SetGrantedHook installs f, run before a subscription handles a
// "granted" message, for the rest of t.
func SetGrantedHook(t testing.TB, f func(payload string)) {
	prev := testHookGranted
	t.Cleanup(func() { testHookGranted = prev })
	testHookGranted = f
}

// SetNaiveHandOff makes waiters count hand-offs from their latest "not
// acquired" attempt, whatever counter it saw, for the rest of t.
func SetNaiveHandOff(t testing.TB) {
	t.Cleanup(func() { testNaiveHandOff = false })
	testNaiveHandOff = true
}

// SetHistoryBlindHandOff makes waiters compare hand-off counters across
// histories (protocol 5's rule) for the rest of t.
func SetHistoryBlindHandOff(t testing.TB) {
	t.Cleanup(func() { testHistoryBlindHandOff = false })
	testHistoryBlindHandOff = true
}

// SetWatchdogWokenHook installs f, run each time a watchdog's loop is
// woken, for the rest of t.
func SetWatchdogWokenHook(t testing.TB, f func()) {
	prev := testHookWatchdogWoken
	t.Cleanup(func() { testHookWatchdogWoken = prev })
	testHookWatchdogWoken = f
}

// SetTestHooks installs the test hooks (nil keeps one as it is) for the
// rest of t, restoring them when t ends. Not for parallel tests.
func SetTestHooks(t testing.TB, renewAnnounced, woken func()) {
	prevRenew, prevWoken := testHookRenewAnnounced, testHookWoken
	t.Cleanup(func() { testHookRenewAnnounced, testHookWoken = prevRenew, prevWoken })
	if renewAnnounced != nil {
		testHookRenewAnnounced = renewAnnounced
	}
	if woken != nil {
		testHookWoken = woken
	}
}

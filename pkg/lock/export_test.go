package lock

import "testing"

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

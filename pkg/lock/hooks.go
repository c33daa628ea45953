package lock

// Test hooks: points where a test holds a goroutine to force an
// interleaving that real timing makes rare. Tests set them before starting
// any Locker and restore them afterwards; in production they do nothing.
var (
	// testHookRenewAnnounced runs right after the watchdog announced a
	// renewal (Lease.renewing is set).
	testHookRenewAnnounced = func() {}
	// testHookWoken runs right after a waiter took a wake-up, before its
	// next attempt.
	testHookWoken = func() {}
	// testHookHandOff runs when a waiter looked at a hand-off it heard:
	// counted says the notice carried a counter, started that the lease
	// started from it without a round trip.
	testHookHandOff = func(_, _ bool) {}
	// testNaiveHandOff makes a waiter count a hand-off from its latest
	// "not acquired" attempt whatever counter that attempt saw: the unsafe
	// rule TestALateNoticeIsNotALease must catch (SetNaiveHandOff).
	testNaiveHandOff = false
	// testHistoryBlindHandOff makes a waiter compare a notice's counter
	// with its attempts' whatever history each belongs to: protocol 5's
	// rule, which TestALateNoticeAcrossALostHistoryIsNotALease must catch
	// (SetHistoryBlindHandOff).
	testHistoryBlindHandOff = false
	// testHookGranted runs in a subscription's receive loop before it
	// handles a "granted" message: a test blocks it to deliver the message
	// late.
	testHookGranted = func(string) {}
	// testHookWatchdogWoken runs each time the watchdog's loop is woken (a
	// lease due sooner than its timer, or the timer).
	testHookWatchdogWoken = func() {}
)

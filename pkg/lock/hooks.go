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
)

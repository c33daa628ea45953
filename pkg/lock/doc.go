// Package lock hands out leases on Redis keys: atomic acquisition
// (SET NX PX in one script), owner-only release and renewal, a watchdog that
// renews while the holder lives, a local validity deadline, and a monotonic
// fencing token per acquisition.
//
//	locker, err := lock.New(redisClient, lock.WithTTL(10*time.Second))
//	lease, err := locker.Acquire(ctx, "nightly-settlement")
//	if err != nil { ... }
//	defer lease.Release(context.Background())
//	err = store.Write(lease.Context(), lease.Fence(), result) // bind work to the lease
//
// Give the go-redis client ContextTimeoutEnabled: true, so that a renewal
// stops waiting for a paused server when the lease's validity ends (the
// lease ends on time either way; without it a late reply only holds a
// goroutine and Close longer).
//
// # What a lease guarantees
//
// Each statement names the test, against a real redis-server, that shows it.
//
//   - While Err() is nil and ValidUntil has not passed, no other holder of
//     this library holds the key on that Redis — provided Redis kept the key
//     (see below) and clocks drift less than the drift allowance
//     (TestNoLostUpdateUnderContention, TestLateReleaseDoesNotDeleteTheSuccessorsKey).
//   - Acquisition is one script: SET NX PX and the fence increment are
//     atomic against every other client, so a key
//     never exists without its TTL (TestLockKeyNeverExistsWithoutTTL). Redis
//     does not roll a failed script back; the script checks the fence
//     counter before using it and deletes its own SET on any later error,
//     so a failed attempt leaves no key behind (TestFailedAcquireLeavesNoKey).
//     An attempt whose reply was lost (timeout, broken connection) may still
//     run on the server: the Locker releases its value in the background
//     (TestTimedOutAttemptIsGivenBack).
//   - ValidUntil is measured on this process's monotonic clock from before
//     the acquiring (or renewing) request was sent, minus a drift allowance,
//     so it passes no later than the key expires in Redis
//     (TestAReplyReadAfterThePauseIsNotALease). When it passes without a
//     successful renewal, Done closes and Context is cancelled, even if
//     Redis never answers: a paused or partitioned holder stops believing it
//     holds the lock before anyone else can take it
//     (TestLocalDeadlineEndsTheLeaseWhileRedisIsPaused, TestErrChecksTheDeadlineItself).
//   - Release and renewal are compare-and-delete and compare-and-PEXPIRE:
//     they never touch a successor's key and never re-create an expired one
//     (TestLateReleaseDoesNotDeleteTheSuccessorsKey,
//     TestRenewalOfAnExpiredKeyFailsAndDoesNotRecreateIt).
//   - Fence() is greater than every fence handed out for the key before, as
//     long as the counter survives or the server's clock did not go back (a
//     lost counter restarts from the server's TIME in microseconds, which
//     exceeds every earlier token unless more than a million acquisitions a
//     second were made) (TestFencesStrictlyIncreaseAcrossCompetingClients,
//     TestFenceStaysAboveEarlierTokensAfterTheCounterIsLost). Tokens stay
//     below 2^53, where Lua's numbers are exact
//     (TestRaiseFenceRefusesInexactFloors). Downstream stores that refuse
//     smaller tokens (package fence) turn this into protection against late
//     writes.
//   - With WithReplicaAck, an acquisition or renewal counts only once the
//     replicas acknowledged it, so ValidUntil never exceeds what they hold
//     (TestFailoverBeforeReplication, TestRenewalUnderReplicaAckNeverOutlivesTheReplica).
//   - With WithFailoverQuarantine, a server that is not the one the key's
//     epoch record names (a promoted replica, a restart that may have lost
//     writes) grants the key only after every lease the old server granted
//     or renewed has ended: the longest TTL, plus the cutoff, plus 2 %
//     (TestFailoverQuarantine, TestQuarantineAfterARestartThatLostWrites,
//     TestQuarantineTellsABacklogFromAFailoverAndBack). It does NOT hold
//     when a cut-off master can keep accepting writes past the cutoff (a
//     min-replicas-to-write below the number of replicas, or none), when a
//     client of the key runs an older protocol or a longer TTL, or, under
//     MissingEpochIsNew, when a key is lost together with its record.
//   - Waiting is a line in Redis, shared by every process (New; not
//     Redlock). A failed attempt queues; a release hands the key to the
//     first waiter and tells only that one, so a release costs one
//     acquisition attempt whatever the number of waiting processes
//     (TestOneAttemptPerReleaseAcrossLockers), and waiters get the key in
//     the order they queued, a releaser that asks again queuing behind
//     them (TestTheLineHandsTheKeyInArrivalOrder). A waiter handed the key
//     starts its lease when the notice arrives (protocol 4), counted from
//     its last attempt that ran before the hand-off (its reply saw a lower
//     hand-off counter) plus the expiry the hand-off set, with the fence
//     the hand-off assigned; its confirming write is its first renewal
//     (TestAHandOffStartsWithoutARoundTrip). A late or duplicated notice
//     never counts from an attempt after the hand-off
//     (TestALateNoticeIsNotALease); a waiter whose bound is too short (it
//     waited longer than the window, or was paused) confirms first, its
//     lease counted from that request (test/chaos
//     TestLineHeadPausedAcrossItsHandOff). Never from the releaser's
//     clock. A waiter that gives up leaves the line
//     (TestAWaiterThatGivesUpLeavesTheLine).
//
// # Semaphores
//
// Locker.Semaphore(key, n) is a handle whose Acquire and TryAcquire give
// one of n permits of the key as a Lease:
//
//	exports := locker.Semaphore("billing/exports", 3)
//	lease, err := exports.Acquire(ctx) // one permit; Release gives it back
//
// Each permit is a lease like a lock's, with the guarantees above: while
// Err() is nil and ValidUntil has not passed, at most n-1 other leases of
// the key are held by callers using n, across every Locker
// (TestPermitsNeverExceedNAcrossLockers; in test/chaos, with holder
// processes SIGKILLed and SIGSTOPped at random,
// TestPermitHoldersKilledAndPaused). Acquisition is one script; release and
// renewal compare the value, so a late or repeated release frees no other
// holder's permit and an expired permit is never revived
// (TestReleasingTwiceOrAfterExpiryFreesNoOtherPermit,
// TestAnExpiredPermitIsNotRenewed in internal/protocol); the watchdog,
// the local deadline and WithMaxHold work as for locks
// (TestAPermitIsRenewedAndCappedByMaxHold). A dead holder's permit comes
// back when its TTL runs out (TestADeadHoldersPermitComesBackWithItsTTL).
// All permits of a key share one fence counter: a permit's token is above
// every token of the permits taken before it (TestPermitFencesStrictlyIncrease).
// Lowering n revokes nothing: callers at the new count wait, and give back
// a permit handed to them, until fewer than it are held
// (TestLoweringPermitsRevokesNothing). Waiters queue in the semaphore's own
// line in Redis and a release hands its permit to the first one, as for
// locks (TestOneAttemptPerPermitReleaseAcrossLockers).
//
// What a semaphore does not guarantee, besides what a lock does not:
//
//   - A fence orders acquisitions, not holders: up to n holders hold at
//     once, each with its own token, so a fenced store shared by them
//     refuses the lower tokens of holders that are still valid. Fence per
//     resource that one holder owns at a time (a row, a shard), not one
//     store for the whole semaphore.
//   - The count is each caller's, not stored in Redis: while callers use
//     different counts (during a rollout), the largest count in use bounds
//     the holders.
//   - A Lease is one permit and a permit is never taken twice by one
//     attempt (an attempt whose reply was lost is given back, a hand-off is
//     confirmed once), but nothing limits permits per process or identity:
//     every Acquire call takes a permit of its own, as goroutines contend
//     for a lock.
//   - A key is a lock or a semaphore, not both: while one kind holds it
//     the other is refused (TestLocksAndSemaphoresOnOneKeyExcludeEachOther),
//     and each kind's waiters wake only for their own kind's releases, or
//     when the holder's TTL runs out.
//   - Not on Redlock: a majority of nodes per holder does not bound the
//     holders (3 nodes, 2 permits: holders {a,b}, {a,c}, {b,c} on the three
//     nodes give three holders a majority each). NewRedlock's Lockers
//     refuse semaphores with ErrInvalidConfig.
//
// # Several keys at once
//
// Locker.TryAcquireAll(ctx, keys...) takes every key or none in one
// script, so no client sees part of the set taken
// (TestTryAcquireAllNeverShowsAPartialHold) and callers naming the keys
// in different orders cannot deadlock. The MultiLease holds a Lease per
// key and ends as a whole when any of them ends, giving the others back
// (TestAMultiLeaseEndsWhenAnyKeyIsLost); Release gives every key back in
// one script. AcquireAll waits: it takes one place in every key's line,
// keys are reserved for it as they free up, and nobody who asks after it
// overtakes it (TestAcquireAllIsNotOvertakenByLaterWaiters).
//
// # Readers and a writer
//
// Locker.AcquireShared(ctx, key) (and TryAcquireShared) takes the key
// shared: any number of shared leases at once, or one exclusive lease
// (Acquire), never both (TestSharedAndExclusiveClaimsNeverOverlap, with
// stalled holders and late replies; in test/chaos, a reader process paused
// past its TTL while a writer waits,
// TestAPausedReaderPastItsTTLWhileAWriterWaits). A waiting writer keeps new
// readers out; the last reader's release hands the writer the key and the
// writer's release hands it to the readers queued behind it, each in one
// round trip (TestSharedHoldsKeepTheWriterOutAndTakeTurnsWithIt). A shared
// lease's Fence is the counter as its grant found it: it orders readers
// against writers, not readers among themselves. Lease.Upgrade turns the
// only shared lease into the exclusive one without letting go, or fails
// at once with ErrUpgradeContended (TestUpgradeTakesTheKeyWithoutLettingGoOrIsRefused).
//
// # What it does not guarantee
//
//   - A lease cannot stop code that ignores it. A holder paused longer than
//     the TTL (GC, SIGSTOP, a slow disk) resumes believing nothing and may
//     still issue a write it prepared earlier; only a fenced store refuses it.
//     Check Done, or pass Context, before every effect.
//   - The monotonic clock stops while the machine (VM or host) is
//     suspended. A holder whose machine was suspended past the TTL resumes
//     believing its lease is still valid until its timers catch up; only
//     fencing protects the writes it makes then.
//   - The watchdog proves the process is alive, not that its work advances:
//     cap leases with WithMaxHold (TestMaxHoldEndsALeaseThatTheWatchdogWouldKeep).
//   - Redis replication is asynchronous. A master that acknowledges an
//     acquisition and dies before replicating it can be replaced by a replica
//     without the key: two holders, and a fence handed out again (both shown
//     by TestFailoverBeforeReplication and TestFencesAcrossFailover).
//     WithReplicaAck (WAIT) narrows this to failovers to a replica that did
//     not acknowledge, or to the loss of every replica that did; it does not
//     make Redis strongly consistent.
//   - Redis must keep lock keys: a maxmemory-policy other than noeviction can
//     evict them, and a restart without persistence forgets them.
//   - Anyone who can run commands on the Redis server can break any lock:
//     the lock value is a guard against mistakes, not an access control.
//   - The line's order is not strict by default: a key freed by expiry
//     (its holder died, or a hand-off went unconfirmed) goes to whoever
//     asks first; WithFIFO gives it to the head too. A waiter that died in
//     the line costs the others one hand-off window (1 s, at most the TTL)
//     when its turn comes (TestAHandOffToADeadWaiterCostsOneWindow); a
//     Redis restart without persistence forgets the line with the keys.
//     Waiters with different TTLs on one key share the line's expiry, so
//     the shortest may let a long-sleeping waiter's place lapse: it then
//     queues again at the back.
package lock

// Package election elects one leader among candidates that share a Redis
// key, on the leases of package lock. It offers two things:
//
//   - Run: each candidate contends for a lease on the key; the winner's
//     OnStartedLeading gets the lease's context and its fencing token, and
//     keeps leading while the lease is renewed. Every candidate is told who
//     leads (OnNewLeader), from the lock's "acquired <identity>" messages and
//     from the holder's expiry, which it sees by waiting out the key's PTTL
//     (never by polling at a fixed interval: TestNoPolling).
//   - NewResourceLock: client-go's resourcelock.Interface on Redis, so that
//     client-go's leaderelection.LeaderElector, and through it a
//     controller-runtime manager (LeaderElectionResourceLockInterface), can
//     elect on Redis instead of on a Kubernetes Lease.
//
// A candidate:
//
//	err := election.Run(ctx, election.Config{
//		Client:          redisClient,
//		Key:             "billing/settlement-leader",
//		TTL:             15 * time.Second,
//		ReleaseOnCancel: true,
//		Callbacks: election.Callbacks{
//			OnStartedLeading: func(ctx context.Context, fence uint64) {
//				work(ctx, fence) // stop when ctx is done; send fence with every write
//			},
//		},
//	})
//
// Run returns once this candidate has stopped leading — like client-go's
// LeaderElector.Run, it does not go back to being a candidate. A process
// that lost leadership usually exits (and is restarted); one that wants to
// stand again calls Run again.
//
// # What Run guarantees
//
//   - At most one candidate at a time believes it leads: the leader's context
//     is the lease's, cancelled when the lease is released, found lost, or
//     when its local deadline passes without a renewal. That deadline is
//     measured on the leader's monotonic clock from before the acquiring or
//     renewing request was sent, minus a drift allowance, so it passes no
//     later than the key expires in Redis and before anyone else can take
//     it. This holds while Redis keeps the key (no failover that loses it,
//     no eviction, no restart without persistence) and while clocks drift
//     less than the allowance (lock.WithDriftFactor).
//   - Each leadership comes with a fencing token greater than every earlier
//     leader's (see package lock for the counter's assumptions). A store that
//     refuses writes carrying a smaller token than it has seen (package
//     fence, or "UPDATE ... WHERE fence < $token") refuses a deposed leader
//     even when that leader did not notice it was deposed.
//   - With ReleaseOnCancel, a leader whose context is cancelled cancels its
//     callback's context, waits for OnStartedLeading to return, and only then
//     deletes the key: the next candidate takes over within a few round trips
//     (TestReleaseOnCancelHandover) and never overlaps with work that is
//     still running (TestOneLeaderAtATime). Without it, the
//     key stays until its TTL runs out.
//
// # What it cannot guarantee
//
//   - A leader that ignores its context keeps acting. A process paused
//     longer than the TTL (GC, SIGSTOP, a slow disk) resumes believing
//     nothing and may still issue a write it prepared earlier: only a fenced
//     store refuses that write. Check ctx before every effect and pass the
//     fence to the store.
//   - Redis replication is asynchronous: a master that acknowledges an
//     acquisition and dies before a replica has it can be replaced by a
//     replica without the key, and a second candidate becomes leader while
//     the first still leads (its fence may even repeat). Config.LockOptions
//     can carry lock.WithReplicaAck to make the acquisition and every
//     renewal count only once replicas acknowledged them: leadership then
//     ends when renewals stop reaching the replicas
//     (TestLeaderUnderReplicaAckStepsDownWhenRenewalsAreNotReplicated), but
//     a failover to a replica that never acknowledged still loses the key.
//   - The leader's deadline runs on the monotonic clock, which stops while
//     the machine (VM or host) is suspended: a leader suspended past its TTL
//     resumes believing it leads until its timers catch up. Only the fence
//     protects the writes it makes then.
//   - OnNewLeader reports what this candidate observed, in the order it
//     observed it. It can lag, and can miss a leader whose whole term fell
//     between two observations (for example during a reconnect). Use it for
//     information (logs, routing hints), never as proof of leadership.
//
// # NewResourceLock
//
// The resource lock stores client-go's LeaderElectionRecord as JSON under its
// key and changes it only by compare-and-set against the record this lock
// last read or wrote, as client-go's LeaseLock does with a resourceVersion.
// Expiry is client-go's business (each candidate compares the record's
// renewals with its own clock), so its guarantees are client-go's: leaders
// are deposed by time, without fencing tokens. The key gets a TTL of
// WithRecordTTLFactor × the record's lease duration (default 10×), refreshed
// on every write, so an abandoned election does not leave a key forever. The
// record's key is not a lock key: never point Run, or a lock.Locker, at it.
package election

package lock_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// waitQueued waits until the waiter of identity is subscribed to key's
// waiter channel and in its line (lineKey), then a little more, so that the
// attempt it makes once subscribed has run.
func waitQueued(ctx context.Context, t *testing.T, admin *redis.Client, key, lineKey, identity string) {
	t.Helper()
	waitFor(t, 5*time.Second, "the waiter to queue and subscribe", func() bool {
		subs := admin.PubSubNumSub(ctx, protocol.WaiterChannel(key, identity)).Val()
		return subs[protocol.WaiterChannel(key, identity)] > 0 && admin.ZCard(ctx, lineKey).Val() > 0
	})
	time.Sleep(50 * time.Millisecond)
}

// A waiter handed a lock or a permit by a release starts its lease when the
// notice arrives (protocol 4), without a round trip: its lease counts from
// its own last attempt before the hand-off, so it ends no later than the
// expiry the release set (sent + window − drift), its fence is the one the
// hand-off assigned, and its first renewal, the confirming write, extends
// the key to the full TTL soon after. Before protocol 4 the waiter confirmed
// first (the hook saw no counted hand-off).
func TestAHandOffStartsWithoutARoundTrip(t *testing.T) {
	for _, permits := range []int{0, 2} {
		t.Run("permits="+strconv.Itoa(permits), func(t *testing.T) {
			srv, admin := startRedis(t)
			ctx := ctxTimeout(t, time.Minute)
			var started atomic.Int32
			lock.SetHandOffHook(t, func(counted, ok bool) {
				if counted && ok {
					started.Add(1)
				}
			})
			const key, ttl = "handed", 5 * time.Second
			holder := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("holder"))
			waiter := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("waiter"))
			acquire, waiterAcquire, lineKey := holder.Mutex(key).Acquire, waiter.Mutex(key).Acquire, protocol.LineKey(key)
			if permits > 0 {
				acquire, lineKey = holder.Semaphore(key, permits).Acquire, protocol.PermitLineKey(key)
				waiterAcquire = waiter.Semaphore(key, permits).Acquire
			}
			var held []*lock.Lease
			for range max(permits, 1) {
				l, err := acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, l)
			}
			got := make(chan *lock.Lease, 1)
			go func() {
				l, err := waiterAcquire(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			waitQueued(ctx, t, admin, key, lineKey, "waiter")
			released := time.Now()
			if err := held[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			lease := <-got
			if lease == nil {
				return
			}
			releaseAtEnd(t, lease)
			if started.Load() != 1 {
				t.Fatalf("%d leases started from a hand-off, want 1", started.Load())
			}
			counter, err := admin.Get(ctx, protocol.FenceKey(key)).Uint64()
			if err != nil || lease.Fence() != counter {
				t.Fatalf("fence %d, want the counter the hand-off set %d (%v)", lease.Fence(), counter, err)
			}
			if limit := released.Add(protocol.HandoffWindow); lease.ValidUntil().After(limit) {
				t.Fatalf("the lease is valid until %v after the release, beyond the hand-off's expiry (%v)",
					lease.ValidUntil().Sub(released), protocol.HandoffWindow)
			}
			// The confirming write (the first renewal) extends the key, and
			// the lease, to the full TTL.
			waitFor(t, 2*time.Second, "the confirming write", func() bool {
				return time.Until(lease.ValidUntil()) > 2*time.Second
			})
			if permits == 0 {
				if pttl := admin.PTTL(ctx, key).Val(); pttl < 2*time.Second {
					t.Fatalf("the key's PTTL after the confirming write is %v, want about the TTL %v", pttl, ttl)
				}
			}
		})
	}
}

// A late notice: a hand-off to a waiter runs out unseen (its notice is held
// back), another client takes the key, the waiter's next attempt sees that
// holder, and only then does the notice arrive. The waiter must not count
// its lease from that attempt, which ran after the hand-off (its reply saw
// the hand-off's counter): it confirms first, fails, and gets the key only
// after the other holder released it. The naive rule, counting from the
// latest "not acquired" attempt whatever counter it saw, makes the waiter
// hold the key at the same time as the other client: caught here.
func TestALateNoticeIsNotALease(t *testing.T) {
	for _, naive := range []bool{false, true} {
		t.Run(map[bool]string{false: "redlease", true: "naive: counts from the latest attempt"}[naive], func(t *testing.T) {
			srv, admin := startRedis(t)
			ctx := ctxTimeout(t, time.Minute)
			if naive {
				lock.SetNaiveHandOff(t)
			}
			const key = "late-notice"
			var confirmedFirst atomic.Int32
			lock.SetHandOffHook(t, func(counted, started bool) {
				if counted && !started {
					confirmedFirst.Add(1)
				}
			})
			hold := make(chan struct{})
			var once sync.Once
			lock.SetGrantedHook(t, func(string) {
				once.Do(func() { <-hold }) // the first notice arrives when the test says
			})
			// The holder: a raw acquire with a 1 s TTL (the waiter's timed
			// attempt comes then, after the other client took the key),
			// released by the test with a 200 ms hand-off window.
			holderValue, err := protocol.NewValue("holder")
			if err != nil {
				t.Fatal(err)
			}
			args := protocol.AcquireArgs{Value: holderValue, TTL: time.Second, Fencing: true, Identity: "holder"}
			if err := protocol.AcquireScript.Run(ctx, admin, protocol.AcquireKeys(key), args.Argv()...).Err(); err != nil {
				t.Fatal(err)
			}
			waiter := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("waiter"))
			other := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("other"))
			type result struct {
				lease *lock.Lease
				at    time.Time
			}
			got := make(chan result, 1)
			go func() {
				l, err := waiter.Acquire(ctx, key)
				if err != nil {
					t.Error(err)
				}
				got <- result{l, time.Now()}
			}()
			waitQueued(ctx, t, admin, key, protocol.LineKey(key), "waiter")
			if ok, err := protocol.Release(ctx, protocol.Scripts(admin), key, holderValue, protocol.ReleaseArgs{Window: 200 * time.Millisecond}); err != nil || !ok {
				t.Fatalf("release = %v, %v", ok, err)
			}
			// The hand-off runs out; the other client takes the key.
			time.Sleep(250 * time.Millisecond)
			theirs, err := other.TryAcquire(ctx, key)
			if err != nil {
				close(hold)
				t.Fatal(err)
			}
			otherFrom := time.Now()
			// The waiter's timed attempt (its holder's TTL ran out) sees the
			// other holder and queues again.
			waitFor(t, 3*time.Second, "the waiter's next attempt", func() bool {
				return admin.ZCard(ctx, protocol.LineKey(key)).Val() > 0
			})
			close(hold) // the late notice
			var r result
			select {
			case r = <-got:
			case <-time.After(500 * time.Millisecond):
			}
			overlap := r.lease != nil && r.at.After(otherFrom)
			if err := theirs.Release(ctx); err != nil {
				t.Fatalf("the other holder's release: %v (its key was taken from it)", err)
			}
			if r.lease == nil {
				r = <-got
			}
			if r.lease != nil {
				releaseAtEnd(t, r.lease)
			}
			if overlap != naive {
				t.Fatalf("the waiter held the key while the other client did: %v, want %v", overlap, naive)
			}
			if !naive && confirmedFirst.Load() == 0 {
				t.Fatal("the late notice was never weighed (the scenario did not happen)")
			}
		})
	}
}

// Under WithReplicaAck a lease counts only once replicas acknowledged a
// write of its own (the release's hand-off is not WAITed), and without the
// watchdog nobody would send the confirming write: in both, a waiter handed
// the key confirms first, and its lease counts from that request. The key
// is on the replica when Acquire returns.
func TestAHandOffIsConfirmedFirstUnderReplicaAckOrWithoutWatchdog(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []lock.Option
	}{
		{"replica ack", []lock.Option{lock.WithReplicaAck(1, time.Second)}},
		{"without watchdog", []lock.Option{lock.WithoutWatchdog()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			group := redistest.StartReplicated(t, 1)
			admin := group.Master.Client(t)
			ctx := ctxTimeout(t, 30*time.Second)
			var counted, started atomic.Int32
			lock.SetHandOffHook(t, func(c, s bool) {
				if c {
					counted.Add(1)
				}
				if s {
					started.Add(1)
				}
			})
			const key = "confirmed-first"
			opts := append([]lock.Option{lock.WithTTL(5 * time.Second)}, tt.opts...)
			holder := newLocker(t, group.Master.Client(t), append(opts, lock.WithIdentity("holder"))...)
			waiter := newLocker(t, group.Master.Client(t), append(opts, lock.WithIdentity("waiter"))...)
			held, err := holder.TryAcquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *lock.Lease, 1)
			go func() {
				l, err := waiter.Acquire(ctx, key)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			waitQueued(ctx, t, admin, key, protocol.LineKey(key), "waiter")
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
			lease := <-got
			if lease == nil {
				return
			}
			releaseAtEnd(t, lease)
			if counted.Load() != 1 || started.Load() != 0 {
				t.Fatalf("counted hand-offs heard %d, leases started from one %d; want 1 and 0", counted.Load(), started.Load())
			}
			if time.Until(lease.ValidUntil()) < 3*time.Second {
				t.Fatalf("the lease is valid for %v, want about the TTL (counted from its confirming write)", time.Until(lease.ValidUntil()))
			}
			if v := group.Replicas[0].Client(t).Get(ctx, key).Val(); tt.name == "replica ack" && v != lease.Value() {
				t.Fatalf("the replica holds %q when Acquire returned, want the waiter's value", v)
			}
		})
	}
}

// A Redis user refused INFO (an ACL of its own; the operator's tenant
// users may read INFO replication) still hands locks over: the scripts
// cannot read the counter's history (protocol 6), so its notices carry
// none and every waiter confirms first, with a round trip, and holds a
// lease counted from that confirming write.
func TestAHandOffWithoutINFOIsConfirmedFirst(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := admin.Do(ctx, "acl", "setuser", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	asUser := func(o *redis.Options) { o.Username, o.Password = "noinfo", "pw" }
	if err := srv.Client(t, asUser).Info(ctx, "replication").Err(); err == nil {
		t.Fatal("INFO replication allowed to the user the test refuses it")
	}
	var started atomic.Int32
	lock.SetHandOffHook(t, func(_, s bool) {
		if s {
			started.Add(1)
		}
	})
	const key, ttl = "no-info", 5 * time.Second
	holder := newLocker(t, srv.Client(t, asUser), lock.WithTTL(ttl), lock.WithIdentity("holder"))
	waiter := newLocker(t, srv.Client(t, asUser), lock.WithTTL(ttl), lock.WithIdentity("waiter"))
	held, err := holder.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lock.Lease, 1)
	go func() {
		l, err := waiter.Acquire(ctx, key)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitQueued(ctx, t, admin, key, protocol.LineKey(key), "waiter")
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease := <-got
	if lease == nil {
		return
	}
	releaseAtEnd(t, lease)
	if started.Load() != 0 {
		t.Fatal("a lease started from a notice without the counter's history")
	}
	if time.Until(lease.ValidUntil()) < ttl*3/5 {
		t.Fatalf("the lease is valid for %v, want about the TTL (counted from its confirming write)", time.Until(lease.ValidUntil()))
	}
}

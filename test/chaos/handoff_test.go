package chaos

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The one-round-trip hand-off (protocol 4, DESIGN §10.1 "Hand-off
// validity") under faults, with the waiters in helper processes: a notice
// delivered late and twice, after the waiter's next attempt saw another
// holder; a notice lost; a waiter SIGKILLed right after the grant. (A
// waiter paused between the grant and the notice is
// TestLineHeadPausedAcrossItsHandOff: its last attempt before the grant is
// older than the window when it resumes, so it confirms first.)

// rawHolder takes key in the test process with the protocol's acquire
// script, for ttl, and returns its value.
func rawHolder(ctx context.Context, t *testing.T, c *redis.Client, key string, ttl time.Duration) string {
	t.Helper()
	v, err := protocol.NewValue("holder")
	if err != nil {
		t.Fatal(err)
	}
	args := protocol.AcquireArgs{Value: v, TTL: ttl, Fencing: true, Identity: "holder"}
	res, err := protocol.ParseAttempt(protocol.AcquireScript.Run(ctx, c, protocol.AcquireKeys(key), args.Argv()...))
	if err != nil || !res.Acquired {
		t.Fatalf("the holder's acquire = %v, %v", res, err)
	}
	return v
}

// waitSubscribed waits until channel has a subscriber.
func waitSubscribed(ctx context.Context, t *testing.T, c *redis.Client, channel string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.PubSubNumSub(ctx, channel).Val()[channel] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nobody subscribed to %s within 10s", channel)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stoppedWaiterHandedTheKey starts a waiter helper of role (TTL 2 s) in
// key's line, on the server c reaches, which the helper reaches at addr,
// stops it with its subscription cut, and has holder's release hand it the
// key for window. It returns the waiter, its waiter channel and the
// notice, which only the test heard (the waiter listens there again once
// resumed).
func stoppedWaiterHandedTheKey(s *scenario, c *redis.Client, addr, key, holder, role string, window time.Duration) (*helper, string, *redis.Message) {
	t, ctx := s.t, s.ctx
	t.Helper()
	env := map[string]string{"REDIS": addr, "KEY": key, "TTL": "2s", "HOLD": "50ms", "ROUNDS": "1"}
	if s.tickets {
		env["TICKETS"] = "1"
	}
	w := queueHelpers(t, c, key, 1, role, env)[0]
	identity := map[bool]string{false: "waiter-", true: "naive-"}[s.naive] + strconv.Itoa(w.cmd.Process.Pid)
	waiterChannel := protocol.WaiterChannel(key, identity)
	waitSubscribed(ctx, t, c, waiterChannel)
	time.Sleep(200 * time.Millisecond) // its attempt once subscribed has run
	// Queued by ticket, the waiter's place is a value the counter passed.
	if s.tickets {
		first := c.ZRangeWithScores(ctx, protocol.LineKey(key), 0, 0).Val()
		counter, err := c.Get(ctx, protocol.FenceKey(key)).Float64()
		if err != nil || len(first) != 1 || first[0].Score > counter {
			t.Fatalf("the waiter's place %v with the counter at %v (%v): not a ticket", first, counter, err)
		}
	}

	w.signal(syscall.SIGSTOP)
	if err := c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	capture := c.Subscribe(ctx, waiterChannel)
	if _, err := capture.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := protocol.Release(ctx, protocol.Scripts(c), key, holder, protocol.ReleaseArgs{Window: window}); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	notice, err := capture.ReceiveMessage(ctx)
	if err != nil || !strings.HasPrefix(notice.Payload, "granted ") {
		t.Fatalf("the notice = %v, %v", notice, err)
	}
	_ = capture.Close() // from now on only the waiter listens there
	return w, waiterChannel, notice
}

// waitRequeued waits until a resumed waiter subscribed to waiterChannel
// again and is in key's line.
func waitRequeued(ctx context.Context, t *testing.T, c *redis.Client, key, waiterChannel string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.ZCard(ctx, protocol.LineKey(key)).Val() == 0 || c.PubSubNumSub(ctx, waiterChannel).Val()[waiterChannel] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the resumed waiter did not subscribe and try again within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A hand-off's notice never reaches its waiter in time: the waiter is
// stopped and its subscription cut when the release hands it the key (for
// a 200 ms window), the window runs out, another client takes the key, and
// the waiter, resumed, tries again and sees that holder. Only then does
// the notice arrive, twice (a copy the test took when it was sent).
// redlease: the attempt that saw the other holder reported the hand-off's
// counter, so the waiter does not count from it; its earlier attempt is
// older than the window: it confirms first, fails, and gets the key after
// the other client released it: no overlap. Naive: a waiter counting from
// its latest "not acquired" attempt, whatever counter it saw, believes it
// holds the key while the other client does, which S1 catches. redlease
// runs twice: its waiter queued by the clock and by ticket (the ticket is
// a value the counter passes through, below the hand-off's).
func TestALateDuplicatedNoticeAfterAnotherHolder(t *testing.T) {
	lineVariants(t, "redlease", "naive waiter counting from its latest attempt", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		ctx := s.ctx
		const key = "late-notice"
		holder := rawHolder(ctx, t, c, key, 3*time.Second)
		role := map[bool]string{false: "line-waiter", true: "naive-counting-waiter"}[s.naive]
		w, waiterChannel, notice := stoppedWaiterHandedTheKey(s, c, srv.Addr(), key, holder, role, 200*time.Millisecond)

		time.Sleep(300 * time.Millisecond) // the hand-off runs out
		other := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("other"))
		lease, err := other.TryAcquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		resumeAndDeliverTheOldNotice(s, c, key, w, waiterChannel, notice, lease, Mono(), 0)
	})
}

// A hand-off's notice is lost: the waiters' subscriptions are cut just
// before the release. redlease: the subscription comes back and its oldest
// waiter looks, finds the key handed to it and confirms; then the next:
// each gets the key, with no overlap and increasing fences. Naive: waiters
// that trust the messages alone (and come back only after a back-off) miss
// it and wait on.
func TestALostNotice(t *testing.T) {
	variants(t, "redlease", "naive waiters that trust the messages alone", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		ctx := s.ctx
		const key = "lost-notice"
		const ttl = 3 * time.Second
		lease, from := holdInThisProcess(t, srv, key, ttl)
		role, env := "line-waiter", map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": ttl.String(), "HOLD": "50ms", "ROUNDS": "1"}
		if s.naive {
			role, env["CONFIRM"] = "naive-line-waiter", "1"
		}
		ws := queueHelpers(t, c, key, 2, role, env)
		time.Sleep(200 * time.Millisecond) // their attempts once subscribed have run
		if err := c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.release("holder", lease, from); err != nil {
			t.Fatal(err)
		}
		// Expected: a reconnect (about 100 ms), a confirmation and two
		// holds; the naive waiters come back after 2 s, past the window.
		// Bound: 1.5 s.
		s.check("liveness", s.collectClaims(ws, "claim", time.Now().Add(1500*time.Millisecond)))
		if !s.naive {
			s.check("S1", Overlaps(s.h.Claims()))
			s.check("fences", FencesNotIncreasing(s.h.Claims()))
		}
	})
}

// The waiter handed the key is SIGKILLed right after the grant, whether or
// not it had started its lease. redlease: its lease, if it started, ended
// no later than the hand-off's expiry, so the waiter behind it, which gets
// the key once that window ran out, never overlaps it. Naive: a waiter
// that takes the notice as a lease for a TTL from when it reads it
// believes it holds the key past the window, while the next one holds it.
func TestAWaiterKilledRightAfterTheGrant(t *testing.T) {
	variants(t, "redlease", "naive waiter that takes the notice as a lease for a TTL", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		const key = "killed-after-grant"
		const ttl = 3 * time.Second
		lease, from := holdInThisProcess(t, srv, key, ttl)
		env := map[string]string{"REDIS": srv.Addr(), "KEY": key, "TTL": ttl.String(), "HOLD": "10s", "ROUNDS": "1"}
		role := "line-waiter"
		if s.naive {
			role = "naive-line-waiter"
		}
		head := queueHelpers(t, c, key, 1, role, env)[0]
		env["HOLD"] = "50ms"
		next := queueHelpers(t, c, key, 1, "line-waiter", env)[0]
		time.Sleep(200 * time.Millisecond) // their attempts once subscribed have run
		if err := s.release("holder", lease, from); err != nil {
			t.Fatal(err)
		}
		e, ok := head.await("holding", time.Now().Add(3*time.Second))
		head.signal(syscall.SIGKILL)
		_ = head.cmd.Wait()
		if ok {
			s.h.Claim(*e.Claim) // what it believed when it died
		} else if !s.naive {
			t.Log("the head died before it started its lease")
		}
		// Expected: the 1 s window, then one hold. Bound: 4 s.
		if vs := s.collectClaims([]*helper{next}, "claim", time.Now().Add(4*time.Second)); len(vs) > 0 {
			t.Fatal(vs[0])
		}
		s.check("S1", Overlaps(s.h.Claims()))
	})
}

// A hand-off's notice delayed across a restart from an older snapshot
// (issue 39), with the waiter in a helper process: the server saves while
// a holder holds, the holder releases and takes the key again, the waiter
// queues and is stopped with its subscription cut, the release hands it
// the key (the test keeps a copy of the notice), and the server restarts
// from the snapshot: the hand-off and the increments before it are lost.
// Another client takes the key on the new history; the waiter, resumed,
// tries again and sees it at a counter below the old notice's. Then the
// old notice arrives, twice. redlease: the waiter's attempts since the
// restart are of another history than the notice's, so it confirms first,
// fails and waits: S1 holds. Naive: a waiter with protocol 5's rule (the
// latest attempt that saw a lower counter, whatever its history) counts
// from its attempt that saw the other holder and holds beside it: S1
// catches it. redlease runs with its waiter queued by the clock and by
// ticket.
func TestALateNoticeAcrossARestartFromAnOlderSnapshot(t *testing.T) {
	lineVariants(t, "redlease", "naive waiter comparing counters across histories", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		c := srv.Client(t)
		ctx := s.ctx
		const key = "late-across-restart"
		holder := rawHolder(ctx, t, c, key, 2*time.Second)
		if err := c.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := protocol.Release(ctx, protocol.Scripts(c), key, holder, protocol.ReleaseArgs{Window: time.Second}); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		holder = rawHolder(ctx, t, c, key, 2*time.Second) // a grant the restart takes back
		role := map[bool]string{false: "line-waiter", true: "history-blind-waiter"}[s.naive]
		w, waiterChannel, notice := stoppedWaiterHandedTheKey(s, c, srv.Addr(), key, holder, role, time.Second)

		srv.Kill() // no save: the restart brings back the older snapshot
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		theOldNoticeAfterAnotherHolder(s, srv, key, w, waiterChannel, notice)
	})
}

// The same late notice across an asynchronous failover that lost the last
// two increments, with the waiter in a helper process that reaches the
// master through one address (a fault proxy, as a Service or a virtual IP
// would be) and follows the failover there: the replica is cut off after
// it replicated a first grant, the holder releases and takes the key again
// (lost), the stopped waiter is handed the key (lost too), the master dies
// and the replica is promoted, which gives it a new replication history.
// Another client takes the key there at a counter below the notice's; the
// waiter, resumed, tries again and sees it. Then the old notice arrives,
// twice. redlease: the notice's history is not that of any attempt since
// the failover, so the waiter confirms first, fails and waits: S1 holds.
// Naive: protocol 5's rule counts from the attempt that saw the other
// holder, and S1 catches two holders.
func TestALateNoticeAcrossAFailoverThatLostWrites(t *testing.T) {
	variants(t, "redlease", "naive waiter comparing counters across histories", time.Minute, func(t *testing.T, s *scenario) {
		g := redistest.StartReplicated(t, 1)
		proxy := faultproxy.New(t, g.Master.Addr())
		c := g.Master.Client(t)
		ctx := s.ctx
		const key = "late-across-failover"
		holder := rawHolder(ctx, t, c, key, 2*time.Second)
		if n, err := c.Wait(ctx, 1, 5000).Result(); err != nil || n < 1 {
			t.Fatalf("WAIT 1 = %d, %v", n, err)
		}
		g.Replicas[0].Pause()
		if err := c.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := protocol.Release(ctx, protocol.Scripts(c), key, holder, protocol.ReleaseArgs{Window: time.Second}); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		holder = rawHolder(ctx, t, c, key, 2*time.Second) // a grant the failover takes back
		role := map[bool]string{false: "line-waiter", true: "history-blind-waiter"}[s.naive]
		w, waiterChannel, notice := stoppedWaiterHandedTheKey(s, c, proxy.Addr(), key, holder, role, time.Second)

		g.Master.Kill()
		g.Replicas[0].Resume()
		if err := g.Replicas[0].Promote(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.Redirect(g.Replicas[0].Addr())
		theOldNoticeAfterAnotherHolder(s, g.Replicas[0], key, w, waiterChannel, notice)
	})
}

// theOldNoticeAfterAnotherHolder plays the end of a late notice across a
// lost history, srv being the server after the loss: another client takes
// key there (after the key that survived the loss expires) at a counter
// below the notice's, the stopped waiter w resumes, tries again and sees
// it, then the old notice arrives, twice, while the other client holds on.
// redlease's waiter confirms first and fails; a naive one holds beside the
// other client, which S1 catches.
func theOldNoticeAfterAnotherHolder(s *scenario, srv *redistest.Server, key string, w *helper, waiterChannel string, notice *redis.Message) {
	t, ctx := s.t, s.ctx
	t.Helper()
	c := srv.Client(t)
	other := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("other"))
	lease, err := other.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from := Mono()
	g := protocol.ParseGrant(strings.TrimPrefix(notice.Payload, "granted "))
	if lease.Fence() >= uint64(g.Counter) { //nolint:gosec // G115: ParseGrant keeps a positive counter
		t.Fatalf("the new holder's fence %d is not below the lost hand-off's %d: the counter did not go back", lease.Fence(), g.Counter)
	}
	// The line was lost with the history: the waiter queues again; a naive
	// waiter's attempt after its subscription gets 50 ms.
	resumeAndDeliverTheOldNotice(s, c, key, w, waiterChannel, notice, lease, from, 50*time.Millisecond)
}

// resumeAndDeliverTheOldNotice resumes the stopped waiter w and waits until
// it subscribed again and its next attempt saw the other client's lease
// (taken at from) and queued, waits settle more, delivers the old notice
// twice, lets the other client hold on 500 ms and release, then collects
// w's claims and checks that no two claimed windows overlap (S1).
func resumeAndDeliverTheOldNotice(s *scenario, c *redis.Client, key string, w *helper, waiterChannel string, notice *redis.Message, lease *lock.Lease, from int64, settle time.Duration) {
	t, ctx := s.t, s.ctx
	t.Helper()
	w.signal(syscall.SIGCONT)
	waitRequeued(ctx, t, c, key, waiterChannel)
	time.Sleep(settle)
	for range 2 {
		if err := c.Publish(ctx, waiterChannel, notice.Payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the other client holds on
	if err := s.release("other", lease, from); err != nil {
		t.Fatalf("the other client's release: %v", err)
	}
	kind := map[bool]string{false: "claim", true: "holding"}[s.naive]
	if vs := s.collectClaims([]*helper{w}, kind, time.Now().Add(10*time.Second)); len(vs) > 0 {
		t.Fatal(vs[0])
	}
	s.check("S1", Overlaps(s.h.Claims()))
}

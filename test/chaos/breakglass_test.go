package chaos

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// The ways the holder whose lock is broken can be when it is: running
// (its watchdog renewing), SIGSTOPped, or cut off from the lock's Redis
// (but not from the store it writes to).
const (
	alive       = "alive"
	paused      = "paused"
	partitioned = "partitioned"
)

// TestBreakGlassOnAHolderAlivePausedOrPartitioned: a holder process takes
// the lock, reads a counter from a pkg/fence store and is about to write;
// it is left running, SIGSTOPped or partitioned from the lock's Redis;
// its lock is revoked or forced (break-glass, docs/breakglass.md); a
// successor takes the lock and writes; then the holder (resumed,
// reconnected or still running) makes its late write.
//
// Revoke: the tombstone keeps the key's PTTL, so the successor is granted
// only after the holder's claimed validity ended (S1), and the late write
// carries an older fence the store refuses (S2, S4). Naive, a plain DEL of
// the key: the successor is granted at once while the holder still claims
// validity, and S1 catches it; the fence counter survives the DEL, so the
// store still refuses the late write.
//
// Force breaks exclusion by design (the key is freed while the holder
// runs), so S1 is not checked: fences keep the data safe. The counter is
// set back two increments first (an asynchronous failover that lost them)
// and the force is given the holder's fence as its floor, as the
// controller passes its highest fence seen: the successor's fence is above
// the holder's and the late write is refused (S4, fences increase). Naive,
// a plain DEL after the counter went back: the successor's fence is below
// the holder's, the store accepts the holder's late write over the
// successor's, and S4 (a lost update) and the fence order catch it.
func TestBreakGlassOnAHolderAlivePausedOrPartitioned(t *testing.T) {
	for _, force := range []bool{false, true} {
		op, naive := "revoke", "naive DEL of the key"
		if force {
			op, naive = "force", "naive DEL after the counter went back"
		}
		for _, fault := range []string{alive, paused, partitioned} {
			t.Run(op+" "+fault, func(t *testing.T) {
				variants(t, "redlease "+op, naive, time.Minute, func(_ *testing.T, s *scenario) { s.breakGlass(force, fault) })
			})
		}
	}
}

// breakGlass runs one cell of TestBreakGlassOnAHolderAlivePausedOrPartitioned.
func (s *scenario) breakGlass(force bool, fault string) {
	t, ctx := s.t, s.ctx
	srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
	const key, ttl = "ledger-lock", time.Second
	env := map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": key, "TTL": ttl.String()}
	var proxy *faultproxy.Proxy
	if fault == partitioned {
		proxy = faultproxy.New(t, srv.Addr())
		env["REDIS"] = proxy.Addr()
	}
	holder := startHelper(t, "breakglass-holder", env)
	holder.next(t, "about-to-write", 10*time.Second)
	switch fault {
	case paused:
		holder.signal(syscall.SIGSTOP)
	case partitioned:
		proxy.BlackHole()
	}

	direct := srv.Client(t)
	held, err := direct.Get(ctx, protocol.FenceKey(key)).Uint64()
	if err != nil {
		t.Fatalf("reading the holder's fence: %v", err)
	}
	if force { // the counter lost its last two increments
		if err := direct.Set(ctx, protocol.FenceKey(key), held-2, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	requested := time.Now()
	s.breakTheGlass(direct, force, key, "holder-"+strconv.Itoa(holder.cmd.Process.Pid), held)

	succ := newLocker(t, direct, lock.WithTTL(ttl), lock.WithIdentity("successor"), lock.WithFencing(true))
	lease, err := succ.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from := Mono()
	t.Logf("the successor was granted %v after the request (fence %d, the holder's %d)", time.Since(requested).Round(time.Millisecond), lease.Fence(), held)
	store := fence.NewRedisStore(storeSrv.Client(t), "")
	if err := store.Write(ctx, "ledger", lease.Fence(), "1"); err != nil {
		t.Fatal(err)
	}
	s.h.Write(Write{Client: "successor", Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: true})

	switch fault {
	case paused:
		holder.signal(syscall.SIGCONT)
	case partitioned:
		// A renewal at least is swallowed before the partition heals,
		// whatever the successor's wait.
		time.Sleep(time.Until(requested.Add(lock.DefaultRenewInterval(ttl))))
		proxy.Reset()
	}
	late := s.lateWrite(holder)
	if err := s.release("successor", lease, from); err != nil {
		t.Errorf("releasing the successor's lease: %v", err)
	}
	_, counter, _ := store.Read(ctx, "ledger")
	s.checkBreakGlass(force, late, counter)
}

// breakTheGlass revokes or forces key on c, held by identity with fence
// held (the force's floor); the naive variant deletes the key instead.
func (s *scenario) breakTheGlass(c *redis.Client, force bool, key, identity string, held uint64) {
	if s.naive {
		if err := c.Del(s.ctx, key).Err(); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	run := protocol.NewCaller(protocol.FunctionsAuto).On(c)
	args := protocol.BreakGlassArgs{Identity: identity, By: "oncall"}
	if !force {
		if b, err := protocol.Revoke(s.ctx, run, key, args); err != nil || !b.Done {
			s.t.Fatalf("revoke = %+v, %v", b, err)
		}
		return
	}
	args.Floor = held
	if b, err := protocol.Force(s.ctx, run, key, args); err != nil || !b.Done || b.Raised <= held {
		s.t.Fatalf("force = %+v, %v; want done with the counter raised above %d", b, err, held)
	}
}

// lateWrite lets a breakglass-holder make its late write (SIGUSR1) and
// records that write and the claim it reports when its lease ends. It
// returns the write.
func (s *scenario) lateWrite(p *helper) Write {
	s.t.Helper()
	p.signal(syscall.SIGUSR1)
	w, ended := s.recordWriteAndClaim(p)
	s.t.Logf("the old holder's late write accepted: %v; its lease ended: %s", w.Accepted, ended)
	return w
}

// checkBreakGlass is the verdict on a break-glass run whose fenced
// counter reads counter and where the old holder's late write was late.
func (s *scenario) checkBreakGlass(force bool, late Write, counter string) {
	claims, writes := s.h.Claims(), s.h.Writes()
	expectClean(s.t, "S2", StaleAccepted(writes))
	if !force {
		s.check("S1", Overlaps(claims))
		expectClean(s.t, "S4", LostUpdates(writes, counter))
		expectClean(s.t, "fences", FencesNotIncreasing(claims))
		if late.Accepted {
			s.t.Fatal("the old holder's late write was accepted")
		}
		return
	}
	// No S1 for a force: it frees the key while the holder runs.
	s.check("S4", LostUpdates(writes, counter))
	s.check("fences", FencesNotIncreasing(claims))
	if !s.naive && late.Accepted {
		s.t.Fatal("the forced holder's late write was accepted")
	}
}

package chaos

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// A holder process is SIGSTOPped while it prepares a write and its lock is
// revoked (break-glass, docs/breakglass.md); a successor waits for the
// lock, takes it and writes; the holder is resumed and makes its write.
// redlease: the revoke keeps the key's PTTL, so the successor is granted
// only after the holder's claim ended (S1), and the holder's late write
// carries an older fence the store refuses (S2, S4). Naive (a plain DEL of
// the key instead of the revoke): the successor is granted at once while
// the paused holder still claims validity, and S1 catches the overlap;
// the fence counter survives the DEL, so the store still refuses the late
// write (S2 and S4 hold in both variants: fences, not exclusion, keep the
// data safe, as with a force).
func TestPausedHolderRevoked(t *testing.T) {
	variants(t, "redlease revoke", "naive DEL of the key", time.Minute, func(t *testing.T, s *scenario) {
		srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
		ctx := s.ctx
		const key, ttl = "ledger-lock", 2 * time.Second
		holder := s.pausedHelper("paused-writer", map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": key, "TTL": ttl.String()})
		requested := time.Now()
		if s.naive {
			srv.Client(t).Del(ctx, key)
		} else {
			run := protocol.NewCaller(protocol.FunctionsAuto).On(srv.Client(t))
			b, err := protocol.Revoke(ctx, run, key, protocol.BreakGlassArgs{Identity: "paused-" + strconv.Itoa(holder.cmd.Process.Pid), By: "oncall"})
			if err != nil || !b.Done {
				t.Fatalf("revoke = %+v, %v", b, err)
			}
		}

		succ := newLocker(t, srv.Client(t), lock.WithTTL(ttl), lock.WithIdentity("successor"), lock.WithFencing(true))
		lease, err := succ.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		from := Mono()
		t.Logf("the successor was granted %v after the request", time.Since(requested).Round(time.Millisecond))
		store := fence.NewRedisStore(storeSrv.Client(t), "")
		if err := store.Write(ctx, "ledger", lease.Fence(), "1"); err != nil {
			t.Fatal(err)
		}
		s.h.Write(Write{Client: "successor", Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: true})

		late := s.resume(holder)
		if err := s.release("successor", lease, from); err != nil {
			t.Errorf("releasing the successor's lease: %v", err)
		}
		_, counter, _ := store.Read(ctx, "ledger")
		s.check("S1", Overlaps(s.h.Claims()))
		expectClean(t, "S2", StaleAccepted(s.h.Writes()))
		expectClean(t, "S4", LostUpdates(s.h.Writes(), counter))
		if late.Accepted {
			t.Fatal("the paused holder's late write was accepted")
		}
	})
}

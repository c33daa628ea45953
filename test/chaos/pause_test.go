package chaos

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// A holder process is SIGSTOPped while it prepares a write, past its TTL;
// a successor takes the lock and writes; the holder is resumed and makes
// its write. redlease: the holder's claim ended at its local deadline (no
// overlap, S1) and its late write carries an old fence the store refuses
// (S2, and the successor's data survives). Naive (no local deadline, no
// fence): the holder still believes after resuming — S1 catches the overlap
// — and its write overwrites the successor's.
func TestHolderPausedPastItsTTL(t *testing.T) {
	variants(t, "redlease", "naive renewal without a local deadline", time.Minute, func(t *testing.T, s *scenario) {
		srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
		ctx := s.ctx
		const ttl = 400 * time.Millisecond
		env := map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": "ledger-lock", "TTL": ttl.String()}
		if s.naive {
			env["NAIVE"] = "1"
		}
		holder := s.pausedHelper("paused-writer", env)

		// The successor, in this process.
		succ := newLocker(t, srv.Client(t), lock.WithTTL(2*time.Second), lock.WithIdentity("successor"))
		lease, err := succ.Acquire(ctx, "ledger-lock")
		if err != nil {
			t.Fatal(err)
		}
		from := Mono()
		store := storeSrv.Client(t)
		// The successor increments the counter too (it reads 0: the
		// holder has not written yet).
		if s.naive {
			err = store.Set(ctx, "ledger", 1, 0).Err()
		} else {
			err = fence.NewRedisStore(store, "").Write(ctx, "ledger", lease.Fence(), "1")
		}
		if err != nil {
			t.Fatal(err)
		}
		s.h.Write(Write{Client: "successor", Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: true})

		late := s.resume(holder)
		if err := s.release("successor", lease, from); err != nil {
			t.Errorf("releasing the successor's lease: %v", err)
		}

		var counter string
		if s.naive {
			counter = store.Get(ctx, "ledger").Val()
		} else {
			_, counter, _ = fence.NewRedisStore(store, "").Read(ctx, "ledger")
		}
		lost := LostUpdates(s.h.Writes(), counter)
		s.check("S1", Overlaps(s.h.Claims()))
		s.check("S2", StaleAccepted(s.h.Writes()))
		s.check("S4", lost)
		if !s.naive && late.Accepted {
			t.Fatal("the paused holder's late write was accepted")
		}
	})
}

package chaos

import (
	"syscall"
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
	for _, naive := range []bool{false, true} {
		name := "redlease"
		if naive {
			name = "naive renewal without a local deadline"
		}
		t.Run(name, func(t *testing.T) {
			srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
			ctx := ctxFor(t, time.Minute)
			var h History
			const ttl = 400 * time.Millisecond
			env := map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": "ledger-lock", "TTL": ttl.String()}
			if naive {
				env["NAIVE"] = "1"
			}
			holder := startHelper(t, "paused-writer", env)
			holder.next(t, "about-to-write", 10*time.Second)
			holder.signal(syscall.SIGSTOP)

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
			if naive {
				err = store.Set(ctx, "ledger", 1, 0).Err()
			} else {
				err = fence.NewRedisStore(store, "").Write(ctx, "ledger", lease.Fence(), "1")
			}
			if err != nil {
				t.Fatal(err)
			}
			h.Write(Write{Client: "successor", Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: true})

			holder.signal(syscall.SIGCONT)
			w := holder.next(t, "write", 10*time.Second)
			h.Write(*w.Write)
			c := holder.next(t, "claim", 10*time.Second)
			h.Claim(*c.Claim)
			hold(&h, "successor", lease, from, func() error { return lease.Release(ctx) })

			var counter string
			if naive {
				counter = store.Get(ctx, "ledger").Val()
			} else {
				_, counter, _ = fence.NewRedisStore(store, "").Read(ctx, "ledger")
			}
			lost := LostUpdates(h.Writes(), counter)
			if naive {
				expectCaught(t, "S1", Overlaps(h.Claims()))
				expectCaught(t, "S2", StaleAccepted(h.Writes()))
				expectCaught(t, "S4", lost)
				return
			}
			expectClean(t, "S1", Overlaps(h.Claims()))
			expectClean(t, "S2", StaleAccepted(h.Writes()))
			expectClean(t, "S4", lost)
			if w.Write.Accepted {
				t.Fatal("the paused holder's late write was accepted")
			}
		})
	}
}

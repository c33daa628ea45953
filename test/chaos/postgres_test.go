package chaos

import (
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/redlease/redlease/internal/pgtest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// The same fencing check against a real PostgreSQL, through pkg/fence's SQL
// pattern: a holder paused past its lease writes with its old token after
// its successor; the conditional UPDATE refuses it and nothing is lost.
// The same late write without the fence condition overwrites the
// successor's balance: S4 catches it.
func TestFencedSQLWrites(t *testing.T) {
	dsn := pgtest.Start(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing the database: %v", err)
		}
	})
	ctx := ctxFor(t, time.Minute)
	if _, err := db.ExecContext(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL, fence numeric(20) NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	srv := redistest.StartStandalone(t)

	// Both variants share the cluster and the test's one-minute budget
	// (ctx), as they did before each had a scenario.
	variants(t, "fenced UPDATE", "naive UPDATE without the fence", time.Minute, func(t *testing.T, s *scenario) {
		id := "fenced"
		if s.naive {
			id = "naive"
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES ($1, 0)`, id); err != nil {
			t.Fatal(err)
		}
		// deposit adds 10 to the balance it read, under token; naive
		// writes without comparing the token.
		deposit := func(client string, token uint64, read int64) {
			var err error
			if s.naive {
				_, err = db.ExecContext(ctx, `UPDATE accounts SET balance = $2 WHERE id = $1`, id, read+10)
			} else {
				err = fence.ExecFenced(ctx, db, id, token,
					`UPDATE accounts SET balance = $2, fence = $3 WHERE id = $1 AND fence < $3`, id, read+10, strconv.FormatUint(token, 10))
			}
			if err != nil && !errors.Is(err, fence.ErrStale) {
				t.Fatal(err)
			}
			s.h.Write(Write{Client: client, Resource: id, Fence: token, At: Mono(), Accepted: err == nil})
		}
		balance := func() int64 {
			var b int64
			if err := db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = $1`, id).Scan(&b); err != nil {
				t.Fatal(err)
			}
			return b
		}

		old := newLocker(t, srv.Client(t), lock.WithTTL(200*time.Millisecond), lock.WithoutWatchdog())
		next := newLocker(t, srv.Client(t), lock.WithTTL(5*time.Second))
		stale, err := old.TryAcquire(ctx, "account-"+id)
		if err != nil {
			t.Fatal(err)
		}
		staleRead := balance() // read, then "paused" past the lease
		<-stale.Done()
		lease, err := next.Acquire(ctx, "account-"+id)
		if err != nil {
			t.Fatal(err)
		}
		deposit("successor", lease.Fence(), balance())
		deposit("paused", stale.Fence(), staleRead) // the late write
		if err := lease.Release(ctx); err != nil {
			t.Errorf("releasing the successor's lease: %v", err)
		}

		// Each accepted deposit added 10.
		got := strconv.FormatInt(balance()/10, 10)
		s.check("S4", LostUpdates(s.h.Writes(), got))
		if s.naive {
			return
		}
		expectClean(t, "S2", StaleAccepted(s.h.Writes()))
		if balance() != 10 {
			t.Fatalf("balance = %d, want 10 (the successor's deposit only)", balance())
		}
	})
}

package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// pgBinary finds a PostgreSQL server program on PATH or in Debian's
// versioned directory. hack/install-postgres.sh installs it when missing.
func pgBinary(t *testing.T, name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1]
	}
	t.Fatalf("%s not found: run `make test` or hack/install-postgres.sh (PostgreSQL's server binaries)", name)
	return ""
}

// startPostgres starts a throwaway cluster on 127.0.0.1 as an unprivileged
// user (PostgreSQL refuses to run as root) and returns a DSN. It is stopped
// and removed when t ends.
func startPostgres(t *testing.T) string {
	t.Helper()
	initdb, postgres := pgBinary(t, "initdb"), pgBinary(t, "postgres")
	dir, err := os.MkdirTemp("", "chaos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the PostgreSQL cluster: %v", err)
		}
	})
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to start PostgreSQL: %v", err)
		}
		// Parsed as 32-bit, the size of a uid_t/gid_t.
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			t.Fatalf("postgres uid %q: %v", u.Uid, err)
		}
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			t.Fatalf("postgres gid %q: %v", u.Gid, err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...) //nolint:gosec,noctx // G204: PostgreSQL's initdb and postgres, found by pgBinary; noctx: postgres is stopped by the cleanup's SIGINT (fast shutdown) after the test's own cleanups, not by a context's SIGKILL, and Pdeathsig covers an aborted test
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil { // postgres takes the port next
		t.Fatal(err)
	}
	srv := run(postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath) //nolint:gosec // G304: the server's log in this test's own temporary directory
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		_ = logf.Close() // only read through its path
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		_ = srv.Wait()
		_ = logf.Close() // our copy of the server's stdout/stderr; the log is only read through its path
	})
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(30 * time.Second)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	for {
		db, err := sql.Open("pgx", dsn)
		if err == nil {
			err = db.PingContext(ctx)
			_ = db.Close() // a probe: err above already says whether the server answered
		}
		if err == nil {
			return dsn
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath) //nolint:gosec // G304: the server's log in this test's own temporary directory
			t.Fatalf("PostgreSQL did not start: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The same fencing check against a real PostgreSQL, through pkg/fence's SQL
// pattern: a holder paused past its lease writes with its old token after
// its successor; the conditional UPDATE refuses it and nothing is lost.
// The same late write without the fence condition overwrites the
// successor's balance: S4 catches it.
func TestFencedSQLWrites(t *testing.T) {
	dsn := startPostgres(t)
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

// Package pgtest starts a real, throwaway PostgreSQL for the tests that
// check fenced SQL writes (test/chaos, test/agentclients): a store's fence
// check is only shown by the database that runs it.
package pgtest

import (
	"context"
	"database/sql"
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

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver the readiness probe opens
)

// Binary finds a PostgreSQL program (initdb, postgres, psql) on PATH or in
// Debian's versioned directory. hack/install-postgres.sh installs them when
// missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1]
	}
	t.Fatalf("%s not found: run `make test` or hack/install-postgres.sh (Debian's postgresql)", name)
	return ""
}

// Start starts a throwaway cluster on 127.0.0.1 as an unprivileged
// user (PostgreSQL refuses to run as root) and returns a DSN. It is stopped
// and removed when t ends.
func Start(t testing.TB) string {
	t.Helper()
	initdb, postgres := Binary(t, "initdb"), Binary(t, "postgres")
	dir, err := os.MkdirTemp("", "pgtest-")
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
		cmd := exec.Command(name, args...) //nolint:gosec,noctx // G204: PostgreSQL's initdb and postgres, found by Binary; noctx: postgres is stopped by the cleanup's SIGINT (fast shutdown) after the test's own cleanups, not by a context's SIGKILL, and Pdeathsig covers an aborted test
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

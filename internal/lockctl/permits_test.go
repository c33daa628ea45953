/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// runJournaled starts n `lockctl run` at once with args, each child
// appending "start" then, 300 ms later, "end" to a journal, and returns the
// most children that ran at once.
func runJournaled(t *testing.T, n int, args ...string) int {
	t.Helper()
	journal := filepath.Join(t.TempDir(), "journal")
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range codes {
		wg.Go(func() {
			r := lockctl(t, append(args, "--wait", "30s", "--", "sh", "-c",
				fmt.Sprintf(`echo start >> %s; sleep 0.3; echo end >> %s`, journal, journal))...)
			codes[i] = r.code
			if r.code != 0 {
				t.Errorf("run %d exited %d; stderr:\n%s", i, r.code, r.stderr)
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(journal) //nolint:gosec // G304: the test's own file in t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	running, most, starts := 0, 0, 0
	for _, line := range strings.Fields(string(data)) {
		if line == "start" {
			running, starts = running+1, starts+1
			most = max(most, running)
		} else {
			running--
		}
	}
	if starts != n {
		t.Fatalf("journal %q: %d starts, want %d", data, starts, n)
	}
	return most
}

// `lockctl run --permits 2` on plain Redis: of five runs at once, two run
// their children at a time, never three; `lockctl status --permits 2`
// names the holders of a semaphore; --permits is refused with Redlock and
// outside 1..1000.
func TestPermitsLetNRunAtOnce(t *testing.T) {
	srv := redistest.StartStandalone(t)
	url := redisURL(srv)
	if most := runJournaled(t, 5, "run", "--redis", url, "--key", "pool", "--permits", "2"); most != 2 {
		t.Fatalf("at most %d children ran at once, want 2 (the permits)", most)
	}

	cmd, _, _ := startRun(t, "run", "--redis", url, "--key", "pool", "--permits", "2", "--identity", "export-1", "--", "sh", "-c", "echo $$; exec sleep 30")
	st := lockctl(t, "status", "--redis", url, "--key", "pool", "--permits", "2", "-o", "json")
	var report struct {
		Permits, PermitsHeld int
		Held                 bool
		Fence                uint64
		Holders              []struct{ Identity string }
	}
	if err := json.Unmarshal([]byte(st.stdout), &report); err != nil {
		t.Fatalf("status -o json: %v: %q %s", err, st.stdout, st.stderr)
	}
	if report.Permits != 2 || report.PermitsHeld != 1 || !report.Held || report.Fence == 0 || len(report.Holders) != 1 || report.Holders[0].Identity != "export-1" {
		t.Fatalf("status = %+v", report)
	}
	if lockValue.MatchString(st.stdout) {
		t.Fatal("status printed a lock value")
	}
	if table := lockctl(t, "status", "--redis", url, "--key", "pool", "--permits", "2"); !strings.Contains(table.stdout, "PERMITS") || !strings.Contains(table.stdout, "export-1") {
		t.Fatalf("status table:\n%s", table.stdout)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, 10*time.Second)

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"on Redlock", []string{"--redis", url + "," + url + "," + url, "--permits", "3"}},
		{"zero", []string{"--redis", url, "--permits", "0"}},
		{"too many", []string{"--redis", url, "--permits", "1001"}},
	} {
		r := lockctl(t, append(append([]string{"run"}, tt.args...), "--key", "k", "--", "true")...)
		if r.code != 2 || !strings.Contains(r.stderr, "permits") {
			t.Errorf("--permits %s: exit %d, stderr %q; want 2 naming --permits", tt.name, r.code, r.stderr)
		}
	}
}

// Through a DistributedLock with spec.permits 2: `lockctl run --lock` reads
// the permits from the resource (no flag), and status reports them.
func TestPermitsFromTheResource(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	dl := publishLock(t, env, ns, "exports", ns+"/exports", srv.Addr(), "s3cret")
	dl.Spec.Permits = 2
	if err := env.Client.Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	if most := runJournaled(t, 4, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/exports"); most != 2 {
		t.Fatalf("at most %d children ran at once, want 2 (spec.permits)", most)
	}
	st := lockctl(t, "status", ns+"/exports", "--kubeconfig", kubeconfig, "-o", "json")
	var report struct{ Permits int }
	if err := json.Unmarshal([]byte(st.stdout), &report); err != nil || report.Permits != 2 {
		t.Fatalf("status: %v, %q %s; want permits 2", err, st.stdout, st.stderr)
	}
}

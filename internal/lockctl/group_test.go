package lockctl_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// leaf is a COMMAND that writes its pid to $PIDFILE and sleeps.
const leaf = `echo $$ > "$PIDFILE"; exec sleep 30`

// tree is a COMMAND whose child runs script (which writes its pid to
// $PIDFILE): the grandchild of lockctl. The trailing exit keeps the outer
// shell from exec-ing its only command, which would leave no grandchild.
func tree(script string) string {
	return fmt.Sprintf(`sh -c '%s'; exit $?`, script)
}

// startWithPidFile starts `lockctl run` with args around COMMAND `sh -c
// script` and returns it with the pid the script wrote to $PIDFILE.
func startWithPidFile(t *testing.T, args []string, script string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// t.Context() ends with the test: lockctl is killed if still running.
	cmd := program(t.Context(), binary, append(args, "--", "sh", "-c", script)...)
	// A SIGQUIT's core dump would land in the working directory.
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PIDFILE="+pidFile)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	// Survivors hold lockctl's stderr open: Wait must not wait for them, so
	// that a test reports the survivor rather than a lockctl that hangs.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidFile, &errb)
	t.Cleanup(func() {
		if !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cmd, &errb, pid
}

// readPid waits for a whole line in path and parses it as a pid.
func readPid(t *testing.T, path string, stderr *bytes.Buffer) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path) //nolint:gosec // the test's own temporary file
		if err == nil && bytes.HasSuffix(data, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("pid file %s: %v", path, err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s; lockctl's stderr:\n%s", path, stderr.String())
	return 0
}

// gone reports whether pid has exited. Reaping it is not lockctl's job (an
// orphan goes to init or a subreaper), so a zombie counts as gone.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses and may
	// contain any character.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func waitGone(t *testing.T, pid int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still running %v later", what, pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A lost lease stops COMMAND's whole process group, not only its direct
// child: a grandchild that dies of SIGTERM, and one that ignores SIGTERM
// after its parent has exited, which gets SIGKILL after --grace.
func TestLostLeaseStopsTheWholeProcessGroup(t *testing.T) {
	for _, tt := range []struct {
		name       string
		grandchild string
	}{
		{"grandchild", leaf},
		{"grandchild ignores SIGTERM", `trap "" TERM; ` + leaf},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			args := []string{"run", "--redis", redisURL(srv), "--key", "job", "--ttl", "2s", "--grace", "500ms"}
			cmd, stderr, pid := startWithPidFile(t, args, tree(tt.grandchild))
			srv.Client(t).Del(t.Context(), "job")
			if code := waitExit(t, cmd, 20*time.Second); code != 4 {
				t.Fatalf("exit %d, want 4 (lease lost); stderr:\n%s", code, stderr.String())
			}
			waitGone(t, pid, 5*time.Second, "the grandchild")
		})
	}
}

// When lockctl is SIGKILLed, so that it cannot stop anything, the kernel
// kills its direct child (the parent-death signal).
func TestKilledLockctlTakesItsChildAlong(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cmd, _, pid := startWithPidFile(t, []string{"run", "--redis", redisURL(srv), "--key", "job"}, leaf)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, 5*time.Second, "the child of the killed lockctl")
}

// Signals that ask lockctl to stop reach COMMAND's whole group, and lockctl
// exits as COMMAND did (128+N). SIGHUP and SIGQUIT would otherwise kill
// lockctl and leave COMMAND running. A stopped COMMAND (as when it reads the
// terminal: SIGTTIN) is continued to receive them.
func TestStopSignalsReachTheWholeProcessGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM} {
		for _, tt := range []struct {
			name, script string
			stop         bool // SIGSTOP the process that wrote $PIDFILE
		}{
			{"grandchild", tree(leaf), false},
			{"stopped child", leaf, true},
		} {
			t.Run(sig.String()+", "+tt.name, func(t *testing.T) {
				srv := redistest.StartStandalone(t)
				cmd, stderr, pid := startWithPidFile(t, []string{"run", "--redis", redisURL(srv), "--key", "job"}, tt.script)
				if tt.stop {
					if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if code := waitExit(t, cmd, 20*time.Second); code != 128+int(sig) {
					t.Fatalf("exit %d, want %d (COMMAND killed by %v); stderr:\n%s", code, 128+int(sig), sig, stderr.String())
				}
				waitGone(t, pid, 5*time.Second, "the "+tt.name)
			})
		}
	}
}

// Signals that ask lockctl to stop end a wait for the lock: lockctl exits
// without running COMMAND. SIGHUP and SIGQUIT would otherwise kill lockctl
// (SIGQUIT with a goroutine dump, exit 2).
func TestStopSignalsCancelTheWait(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			holder := locktest.New(t, srv.Client(t), lock.WithTTL(30*time.Second))
			lease, err := holder.TryAcquire(t.Context(), "held")
			if err != nil {
				t.Fatal(err)
			}
			locktest.ReleaseAtEnd(t, lease)
			ran := filepath.Join(t.TempDir(), "ran")
			cmd := program(t.Context(), binary, "run", "--redis", redisURL(srv), "--key", "held", "--", "touch", ran)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, srv)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			// 3 (the lock is held), or 1 should the library report the
			// cancelled wait as an error of its own; not a death by sig.
			if code := waitExit(t, cmd, 20*time.Second); code != 3 && code != 1 {
				t.Fatalf("exit %d, want 3 or 1 (wait cancelled); stderr:\n%s", code, stderr.String())
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("COMMAND ran after the wait was cancelled")
			}
		})
	}
}

// waitSubscribed waits until a client listens on some channel: a contended
// Acquire subscribes to its key's events, so lockctl is waiting for the lock
// and past installing its signal handlers.
func waitSubscribed(t *testing.T, srv *redistest.Server) {
	t.Helper()
	c := srv.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for len(c.PubSubChannels(t.Context(), "*").Val()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("lockctl did not subscribe to the lock's events")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

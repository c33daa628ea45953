package redistest

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server whose wall clock a test steps, as NTP steps a master's clock:
// libfaketime (Debian's libfaketime package) preloaded into redis-server
// reads the offset from a file at every call (FAKETIME_NO_CACHE), so a step
// shows in the server's next TIME and expiry check. Only the wall clock
// moves (FAKETIME_DONT_FAKE_MONOTONIC): the server's own timers run on.
//
// Debian's redis-server links the system jemalloc, whose start-up calls
// clock_gettime from inside libfaketime's own and hangs; servers built from
// source (make servers, hack/build-servers.sh) bundle a jemalloc of their
// own and run under it.

// SteppableServerEnv names the redis-server that StartWithSteppableClock
// runs when the one on PATH links the system jemalloc: make test sets it to
// a server make servers built.
const SteppableServerEnv = "REDLEASE_STEPPABLE_SERVER"

// libfaketimeGlob finds Debian's libfaketime, whatever the architecture.
const libfaketimeGlob = "/usr/lib/*/faketime/libfaketime.so.1"

// StartWithSteppableClock starts one standalone redis-server whose wall
// clock StepClock moves. It fails t when libfaketime is missing
// (hack/install-redis.sh installs it) or when no redis-server can run
// under it (see SteppableServerEnv).
func StartWithSteppableClock(t testing.TB, opts ...Option) *Server {
	t.Helper()
	RequireBinaries(t)
	program, err := steppableServer()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	preload, _ := filepath.Glob(libfaketimeGlob)
	if len(preload) == 0 {
		t.Fatalf("redistest: no %s: run hack/install-redis.sh (or make test) to install Debian's libfaketime", libfaketimeGlob)
	}
	clockFile := filepath.Join(t.TempDir(), "faketime")
	if err := writeClockOffset(clockFile, 0); err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(opts)
	return launch(t, "redis-server", cfg.password, false, func(s *Server) ([]string, error) {
		return dataConf(s, cfg)
	}, func(s *Server) {
		s.program, s.clockFile = program, clockFile
		s.env = []string{"LD_PRELOAD=" + preload[0], "FAKETIME_TIMESTAMP_FILE=" + clockFile, "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"}
	})
}

// StepClock moves the server's wall clock by d (back when d is negative):
// its TIME, and the expiry of its keys, whose deadlines stay where they
// were on the clock. Steps add up. Only servers of StartWithSteppableClock
// have a clock to step.
func (s *Server) StepClock(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clockFile == "" {
		return fmt.Errorf("redistest: %s was not started with a steppable clock", s)
	}
	if err := writeClockOffset(s.clockFile, s.clockOffset+d); err != nil {
		return err
	}
	s.clockOffset += d
	return nil
}

// writeClockOffset writes libfaketime's relative offset: seconds, signed
// (without its sign, libfaketime reads a date).
func writeClockOffset(file string, offset time.Duration) error {
	return os.WriteFile(file, fmt.Appendf(nil, "%+.6f\n", offset.Seconds()), 0o600)
}

// steppableServer is the redis-server on PATH when it can run under
// libfaketime, else SteppableServerEnv's.
func steppableServer() (string, error) {
	onPath, err := exec.LookPath("redis-server")
	if err != nil {
		return "", err
	}
	if !linksSystemJemalloc(onPath) {
		return onPath, nil
	}
	named := os.Getenv(SteppableServerEnv)
	switch {
	case named == "":
		return "", fmt.Errorf("%s links the system jemalloc, which hangs under libfaketime, and %s names no other redis-server: make servers builds ones that run under it (from ../shared/servers), and make test sets %s to one",
			onPath, SteppableServerEnv, SteppableServerEnv)
	case linksSystemJemalloc(named):
		return "", fmt.Errorf("%s=%s: links the system jemalloc, or is not a program (it hangs under libfaketime)", SteppableServerEnv, named)
	}
	return named, nil
}

// linksSystemJemalloc: the program at path needs a shared libjemalloc (or
// cannot be read as a program at all).
func linksSystemJemalloc(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return true
	}
	defer func() { _ = f.Close() }()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return true
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libjemalloc") {
			return true
		}
	}
	return false
}

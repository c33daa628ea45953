package redistest

import (
	"errors"
	"syscall"
	"testing"
)

// TestNoServerOutlivesItsTest starts every kind of process in a subtest,
// including a paused one and a restarted one, and checks that none of them
// runs once the subtest has returned.
func TestNoServerOutlivesItsTest(t *testing.T) {
	t.Parallel()
	var pids []int
	t.Run("start", func(t *testing.T) {
		s := StartStandalone(t)
		r := StartReplicated(t, 1)
		g := StartSentinel(t, 1)

		servers := append([]*Server{s, r.Master, r.Replicas[0], g.Master, g.Replicas[0]}, g.Sentinels...)
		for _, srv := range servers {
			if err := syscall.Kill(srv.PID(), 0); err != nil {
				t.Fatalf("%s (pid %d) not running during the subtest: %v", srv, srv.PID(), err)
			}
			pids = append(pids, srv.PID())
		}
		// A restart must leak neither the old process nor the new one.
		if err := s.RestartEmpty(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, s.PID())
		// A paused process must be ended too.
		r.Replicas[0].Pause()
	})
	if len(pids) != 9 {
		t.Fatalf("recorded %d pids, want 9", len(pids))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after its test: kill(pid, 0) = %v", pid, err)
		}
	}
}

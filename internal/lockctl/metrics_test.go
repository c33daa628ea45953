package lockctl_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
)

var metricsOn = regexp.MustCompile(`serving /metrics on (\S+)`)

// `run --metrics-addr` serves the lock library's metrics while it waits
// and while it holds, so that a PodMonitor sees the leases the dashboard
// and RedleaseLeasesLost read: here the lease held, the acquisition's
// duration and the process's own metrics.
func TestRunServesTheLockMetrics(t *testing.T) {
	srv := redistest.StartStandalone(t)
	r := startServing(t, "metrics", metricsOn, []string{"run", "--redis", redisURL(srv), "--key", "scraped",
		"--metrics-addr", "127.0.0.1:0", "--", "sleep", "30"})
	want := []string{
		"redlease_lock_leases_held 1",
		`redlease_lock_acquire_duration_seconds_count{result="acquired"} 1`,
		"process_start_time_seconds",
		"go_goroutines",
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var code int
		if code, body = r.probe("/metrics"); code == 200 && containsAll(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /metrics never had %q; last:\n%s", want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

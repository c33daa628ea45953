package lockctl_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// outageServers are a real redis-server in each state an outage takes:
// stopped (the port refuses connections), paused with SIGSTOP (connections
// open, no answer), and one that refuses an ACL user every key (NOPERM).
type outageServers struct{ stopped, paused, refusing string }

func startOutages(t *testing.T) outageServers {
	t.Helper()
	stopped := redistest.StartStandalone(t)
	stopped.Stop()
	paused := redistest.StartStandalone(t)
	paused.Pause()
	t.Cleanup(paused.Resume)
	refusing := redistest.StartStandalone(t)
	if err := refusing.Client(t).Do(t.Context(), "ACL", "SETUSER", "nokeys", "on", ">pw", "resetkeys", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	return outageServers{stopped: redisURL(stopped), paused: redisURL(paused), refusing: "redis://nokeys:pw@" + refusing.Addr()}
}

// holdByAnother starts a Redis where another holder holds key for 30s.
func holdByAnother(t *testing.T, key string) string {
	t.Helper()
	srv := redistest.StartStandalone(t)
	lease, err := locktest.New(t, srv.Client(t), lock.WithTTL(30*time.Second)).TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, lease)
	return redisURL(srv)
}

// checkOutcome checks r's exit code and that stderr says what happened in
// lockctl's own lines: message matches, and no raw go-redis line
// ("redis: <date> pool.go:770: ...") is among them.
func checkOutcome(t *testing.T, r result, code int, message string) {
	t.Helper()
	if r.code != code || !regexp.MustCompile(message).MatchString(r.stderr) {
		t.Fatalf("exit %d, want %d with a message matching %q; stderr:\n%s", r.code, code, message, r.stderr)
	}
	for line := range strings.Lines(r.stderr) {
		if !strings.HasPrefix(line, "lockctl: ") || strings.Contains(line, "pool.go") || strings.Contains(line, "connection pool") {
			t.Fatalf("stderr has a line that is not lockctl's own: %q; stderr:\n%s", line, r.stderr)
		}
	}
}

// An outage of Redis is its own outcome (6, or --unavailable-exit-code),
// never "lock held" (3), whether --wait runs out or is 0, for `run` and
// `acquire`: a stopped server, a paused one, one refusing the user (ACL).
// A held lock is still 3, or --conflict-exit-code. Every line on stderr
// is lockctl's own and names the lock.
func TestRedisOutageIsNotAHeldLock(t *testing.T) {
	out := startOutages(t)
	held := holdByAnother(t, "k")
	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"stopped, wait runs out", []string{"--redis", out.stopped, "--wait", "1s"}, 6, `lockctl: k: Redis (unavailable when --wait 1s ran out: .*connection refused|did not answer within --wait 1s, nor when asked again)`},
		{"stopped, no wait", []string{"--redis", out.stopped, "--wait", "0"}, 6, `lockctl: k: Redis unavailable: .*connection refused`},
		{"paused, wait runs out", []string{"--redis", out.paused, "--wait", "1s"}, 6, `lockctl: k: Redis did not answer within --wait 1s, nor when asked again`},
		{"paused, no wait", []string{"--redis", out.paused, "--wait", "0"}, 6, `lockctl: k: Redis unavailable: .*i/o timeout`},
		{"ACL refuses, wait", []string{"--redis", out.refusing, "--wait", "1s"}, 6, `lockctl: k: Redis unavailable: .*NOPERM`},
		{"ACL refuses, no wait", []string{"--redis", out.refusing, "--wait", "0"}, 6, `lockctl: k: Redis unavailable: .*NOPERM`},
		{"outage, chosen code", []string{"--redis", out.stopped, "--wait", "0", "--unavailable-exit-code", "69", "--conflict-exit-code", "75"}, 69, `lockctl: k: Redis unavailable`},
		{"held, wait runs out", []string{"--redis", held, "--wait", "300ms"}, 3, `lockctl: k still held after --wait 300ms: lock: "k" not acquired: held by another owner`},
		{"held, no wait", []string{"--redis", held, "--wait", "0"}, 3, `lockctl: lock: "k" not acquired: held by another owner`},
		{"held, chosen code", []string{"--redis", held, "--wait", "300ms", "--conflict-exit-code", "75", "--unavailable-exit-code", "69"}, 75, `k still held after --wait 300ms`},
	} {
		for _, command := range []string{"run", "acquire"} {
			t.Run(command+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				args := append([]string{command, "--key", "k"}, tt.args...)
				if command == "run" {
					args = append(args, "--", "true")
				}
				checkOutcome(t, lockctl(t, args...), tt.code, tt.message)
			})
		}
	}
}

// --conflict-exit-code and --unavailable-exit-code take 1 to 255; anything
// else is a usage error, reported before Redis is asked.
func TestChosenExitCodesAreChecked(t *testing.T) {
	held := holdByAnother(t, "k")
	down := "redis://127.0.0.1:1" // nothing listens on port 1
	for _, tt := range []struct {
		url, flag string
		code      int
	}{
		{held, "--conflict-exit-code=1", 1},
		{held, "--conflict-exit-code=255", 255},
		{down, "--unavailable-exit-code=255", 255},
		{down, "--conflict-exit-code=0", 2},
		{down, "--conflict-exit-code=256", 2},
		{down, "--unavailable-exit-code=-1", 2},
		{down, "--unavailable-exit-code=x", 2},
	} {
		for _, command := range []string{"run", "acquire"} {
			args := []string{command, "--redis", tt.url, "--key", "k", "--wait", "0", tt.flag}
			if command == "run" {
				args = append(args, "--", "true")
			}
			r := lockctl(t, args...)
			if r.code != tt.code || (tt.code == 2 && strings.Contains(r.stderr, "connection refused")) {
				t.Errorf("%s %s: exit %d, want %d (usage errors before any connection); stderr:\n%s", command, tt.flag, r.code, tt.code, r.stderr)
			}
		}
	}
}

// `status` exits 6 when it cannot read the lock from Redis, and shows no
// HELD 0 ("free") for it: the columns read from Redis are "?", and -o json
// has no "held" or "fence", only "error". A lock read is 0, free or held.
func TestStatusExitsNonZeroWhenItCannotRead(t *testing.T) {
	out := startOutages(t)
	held := holdByAnother(t, "k")
	unread := regexp.MustCompile(`(?m)^k\s.*\s1\s+\?\s+\?\s+\?\s+\?\s+\?\s+\?\s+\?\s*$`)
	for _, tt := range []struct {
		name, url string
		code      int
		row       *regexp.Regexp // of the table
		message   string
	}{
		{"stopped", out.stopped, 6, unread, `lockctl: k: could not read the lock: .*connection refused`},
		{"ACL refuses", out.refusing, 6, unread, `lockctl: k: could not read the lock: .*NOPERM`},
		{"held", held, 0, regexp.MustCompile(`(?m)^k\s.*\s1\s+1\s+\S+\s+-\s+-\s+\S+s\s+\d+\s+0\s*$`), `^$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			table := lockctl(t, "status", "--redis", tt.url, "--key", "k")
			checkOutcome(t, table, tt.code, tt.message)
			if !tt.row.MatchString(table.stdout) {
				t.Fatalf("status table:\n%s", table.stdout)
			}
			js := lockctl(t, "status", "--redis", tt.url, "--key", "k", "-o", "json")
			checkOutcome(t, js, tt.code, tt.message)
			var report map[string]any
			if err := json.Unmarshal([]byte(js.stdout), &report); err != nil {
				t.Fatalf("status -o json: %v: %q", err, js.stdout)
			}
			_, hasHeld := report["held"]
			_, hasFence := report["fence"]
			_, hasError := report["error"]
			if read := tt.code == 0; hasHeld != read || hasFence != read || hasError == read {
				t.Fatalf("status -o json = %v: want held and fence only when read, error only when not", report)
			}
		})
	}
}

// go-redis's own lines (dial failures, several a second) become one line
// naming the lock; -v shows each of them.
func TestRedisLogLines(t *testing.T) {
	url := "redis://127.0.0.1:1" // nothing listens on port 1
	quiet := lockctl(t, "run", "--redis", url, "--key", "k", "--wait", "0", "--", "true")
	want := "lockctl: k: Redis: dial tcp 127.0.0.1:1: connect: connection refused\n"
	if strings.Count(quiet.stderr, want) != 1 || strings.Contains(quiet.stderr, "connection pool") {
		t.Fatalf("want one line %q from go-redis's log and no raw line; stderr:\n%s", want, quiet.stderr)
	}
	// A wait of 300 ms: several attempts, each logged by go-redis.
	verbose := lockctl(t, "run", "-v", "--redis", url, "--key", "k", "--wait", "300ms", "--", "true")
	if n := strings.Count(verbose.stderr, "lockctl: k: go-redis: connection pool: failed to dial after"); n < 2 {
		t.Fatalf("-v: want every line go-redis logs (%d lines seen); stderr:\n%s", n, verbose.stderr)
	}
}

// Through a DistributedLock: a lock whose Redis is down is unavailable (6)
// for `run` and `status`; one that is not Ready is 5 for `status` too,
// whose table then shows the reason and nothing read from Redis.
func TestKubernetesModeOutcomes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	srv.Stop()
	key := ns + "/down"
	dl := publishLock(t, env, ns, "down", key, srv.Addr(), "")
	name := regexp.QuoteMeta(key)
	for _, args := range [][]string{
		{"run", "--kubeconfig", kubeconfig, "--lock", ns + "/down", "--wait", "0", "--", "true"},
		{"run", "--kubeconfig", kubeconfig, "--lock", ns + "/down", "--wait", "1s", "--", "true"},
		{"acquire", "--kubeconfig", kubeconfig, "--lock", ns + "/down", "--wait", "0"},
	} {
		checkOutcome(t, lockctl(t, args...), 6, `lockctl: `+name+`: Redis (unavailable|did not answer)`)
	}
	st := lockctl(t, "status", ns+"/down", "--kubeconfig", kubeconfig)
	checkOutcome(t, st, 6, `lockctl: `+name+`: could not read the lock: .*connection refused`)

	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonEndpointUnreachable, Message: "connection refused"})
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	st = lockctl(t, "status", ns+"/down", "--kubeconfig", kubeconfig)
	checkOutcome(t, st, 5, `lockctl: `+name+`: could not read the lock: .*EndpointUnreachable`)
	if !regexp.MustCompile(`False \(EndpointUnreachable: connection refused\)\s+1(\s+\?){7}\s*$`).MatchString(strings.TrimSpace(st.stdout)) {
		t.Fatalf("status table of a lock that is not Ready:\n%s", st.stdout)
	}
}

// A stalled Redis (SIGSTOP: connections open, no answer) makes status
// wait no longer than --request-timeout, and exit 6: before the flag it
// waited through go-redis's read timeouts and retries, about 40 s.
func TestStatusGivesUpOnAStalledRedisAtTheRequestTimeout(t *testing.T) {
	srv := redistest.StartStandalone(t)
	srv.Pause()
	defer srv.Resume()
	r := lockctl(t, "status", "--redis", redisURL(srv), "--key", "stalled", "--request-timeout", "1s")
	checkOutcome(t, r, 6, `lockctl: stalled: Redis did not answer within --request-timeout 1s`)
	if r.took > 5*time.Second {
		t.Fatalf("status against a stalled Redis took %v, want it within 5s of a 1s request timeout", r.took)
	}
}

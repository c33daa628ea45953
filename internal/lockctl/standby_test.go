package lockctl_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// takeoverRuns is how many times TestStandbyTakeover kills (and stops) the
// leader: 1 in the suite; 10 for the distribution docs/lockctl.md reports
// (go test ./internal/lockctl -run TestStandbyTakeover -takeover-runs 10 -v).
var takeoverRuns = flag.Int("takeover-runs", 1, "TestStandbyTakeover: leaders killed (and stopped gracefully) per case")

// syncBuffer is a bytes.Buffer that exec's copying goroutine may write
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// replica is one `lockctl run --ready-addr 127.0.0.1:0` process, as one pod
// of an active/standby Deployment.
type replica struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	addr   string        // where it serves /readyz and /livez
	exited chan struct{} // closed once cmd.Wait returned
}

var servingOn = regexp.MustCompile(`serving /readyz and /livez on (\S+)`)

// startReplica starts `lockctl run ARGS --identity NAME --ready-addr
// 127.0.0.1:0 -- sh -c CHILD` and waits until it serves.
func startReplica(t *testing.T, name, child string, args ...string) *replica {
	t.Helper()
	args = append(append([]string{"run"}, args...), "--identity", name, "--ready-addr", "127.0.0.1:0", "--", "sh", "-c", child)
	return startServing(t, name, servingOn, args)
}

// startServing starts lockctl ARGS as name and waits until its stderr says
// (serving, whose first group is the address) that it serves.
func startServing(t *testing.T, name string, serving *regexp.Regexp, args []string) *replica {
	t.Helper()
	r := &replica{name: name, cmd: program(context.Background(), binary, args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	r.cmd.Dir = t.TempDir() // a SIGQUIT's core dump would land there
	r.cmd.Stderr = r.stderr
	r.cmd.WaitDelay = time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }() // the exit code is read from ProcessState
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill() // fails only once it has exited; its child dies with it (parent-death signal)
		<-r.exited
		if t.Failed() {
			t.Logf("%s's stderr:\n%s", name, r.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := serving.FindStringSubmatch(r.stderr.String()); m != nil {
			r.addr = m[1]
			return r
		}
		select {
		case <-r.exited:
			t.Fatalf("%s exited %d before serving; stderr:\n%s", name, r.cmd.ProcessState.ExitCode(), r.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve (%s); stderr:\n%s", name, serving, r.stderr.String())
		}
	}
}

// probeClient asks like a kubelet: a new connection per probe, a short
// timeout (a stopped process accepts connections but never answers).
var probeClient = &http.Client{Timeout: 100 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}

// probe returns the status code and body of GET path, code 0 when there is
// no answer.
func (r *replica) probe(path string) (int, string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+r.addr+path, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body) // a cut body still has its status code
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// waitProbe polls path until it answers code, failing after within.
func (r *replica) waitProbe(t *testing.T, path string, code int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, body := r.probe(path)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %d %q, want %d within %v; stderr:\n%s", r.name, path, got, body, code, within, r.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// waitExit waits for the replica's exit code.
func (r *replica) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.exited:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("%s still running after %v; stderr:\n%s", r.name, within, r.stderr.String())
		return -1
	}
}

// probeSample is one /readyz answer: whether it was 200, and when the
// request was sent.
type probeSample struct {
	at    time.Time
	ready bool
}

// sampler probes the replicas' /readyz one after the other, every 5 ms,
// until stopped, like readiness probes on two pods.
type sampler struct {
	replicas []*replica
	samples  [][]probeSample // per replica
	firstOf  []chan struct{} // closed at a replica's first 200
	stopc    chan struct{}
	once     sync.Once
	done     chan struct{}
}

func startSampler(replicas ...*replica) *sampler {
	s := &sampler{replicas: replicas, samples: make([][]probeSample, len(replicas)), stopc: make(chan struct{}), done: make(chan struct{})}
	for range replicas {
		s.firstOf = append(s.firstOf, make(chan struct{}))
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, r := range s.replicas {
				at := time.Now()
				code, _ := r.probe("/readyz")
				s.samples[i] = append(s.samples[i], probeSample{at: at, ready: code == http.StatusOK})
				if code == http.StatusOK && !slices.ContainsFunc(s.samples[i][:len(s.samples[i])-1], func(p probeSample) bool { return p.ready }) {
					close(s.firstOf[i])
				}
			}
			select {
			case <-s.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling (again: a no-op); the samples may be read
// afterwards.
func (s *sampler) stop() {
	s.once.Do(func() { close(s.stopc) })
	<-s.done
}

// firstReady returns when replica i first answered 200.
func (s *sampler) firstReady(i int) time.Time {
	for _, p := range s.samples[i] {
		if p.ready {
			return p.at
		}
	}
	return time.Time{}
}

// overlap returns an error when the samples prove two replicas Ready at
// once. A lockctl's readiness goes one way (503, 200, then 503 for good),
// so a replica that answered 200 at t1 and at t2 was Ready all along
// [t1, t2]: another replica's 200 sent within it is an overlap. Two
// answers sent a moment apart are no proof by themselves (the first may
// have turned 503 just after answering), which is why this brackets them.
func (s *sampler) overlap() error {
	for i := range s.samples {
		first, last := time.Time{}, time.Time{}
		for _, p := range s.samples[i] {
			if p.ready {
				if first.IsZero() {
					first = p.at
				}
				last = p.at
			}
		}
		for j := range s.samples {
			if j == i || first.IsZero() {
				continue
			}
			for _, p := range s.samples[j] {
				if p.ready && !p.at.Before(first) && !p.at.After(last) {
					return fmt.Errorf("%s and %s both Ready: %s answered 200 from %v to %v, %s answered 200 at %v",
						s.replicas[i].name, s.replicas[j].name, s.replicas[i].name, first.Format(time.StampMicro), last.Format(time.StampMicro),
						s.replicas[j].name, p.at.Format(time.StampMicro))
				}
			}
		}
	}
	return nil
}

// leaderChild is the replicas' COMMAND: it runs until signalled.
const leaderChild = `exec sleep 600`

// takeover is what one run of a case measured.
type takeover struct {
	took time.Duration // from the signal to the standby's first 200
	// afterExpiry is from the killed leader's key expiring to the
	// standby's first 200, when measured (SIGKILL only).
	afterExpiry time.Duration
	measured    bool
}

// startPair starts leader a and standby b on key, a Ready, b waiting for
// the lock: subscribed to its events, /livez 200, /readyz 503.
func startPair(t *testing.T, srv *redistest.Server, key string, ttl time.Duration) (a, b *replica) {
	t.Helper()
	args := []string{"--redis", redisURL(srv), "--key", key, "--ttl", ttl.String()}
	a = startReplica(t, "a", leaderChild, args...)
	a.waitProbe(t, "/readyz", http.StatusOK, 30*time.Second)
	b = startReplica(t, "b", leaderChild, args...)
	waitSubscribedTo(t, srv, key)
	b.waitProbe(t, "/livez", http.StatusOK, 10*time.Second)
	if code, body := b.probe("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the lock") {
		t.Fatalf("standby /readyz: %d %q, want 503 waiting for the lock", code, body)
	}
	return a, b
}

// runTakeover starts leader a and standby b on key, signals a with sig
// and measures until b answers 200, sampling both throughout: never both
// Ready. For SIGSTOP it then continues a, which must never answer 200
// again and exits 4.
func runTakeover(t *testing.T, srv *redistest.Server, key string, ttl time.Duration, sig syscall.Signal) takeover {
	t.Helper()
	a, b := startPair(t, srv, key, ttl)
	s := startSampler(a, b)
	defer s.stop()
	select { // the sampler has seen the leader Ready
	case <-s.firstOf[0]:
	case <-time.After(10 * time.Second):
		t.Fatal("the sampler never saw the leader Ready")
	}
	// Both run, sampled, for a while before the leader goes: a standby
	// wrongly Ready meanwhile lands between two of the leader's 200s. For
	// a kill, a random part spreads the signal over the renewal period
	// (ttl/3), so the key's remaining TTL then varies as it would.
	pause := 100 * time.Millisecond
	if sig != syscall.SIGTERM {
		pause += rand.N(ttl / 3) //nolint:gosec // G404: a test's timing spread, not a secret
	}
	time.Sleep(pause)
	signalled := time.Now()
	if err := a.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	var expiry time.Time // of the killed leader's key, once it cannot renew
	if sig == syscall.SIGKILL {
		a.waitExit(t, 20*time.Second)
		expiry = keyExpiry(t, srv.Client(t), key, a.name)
	}
	bound := ttl + 2*time.Second // functional: far above the expected remaining TTL plus milliseconds
	select {
	case <-s.firstOf[1]:
	case <-time.After(bound + time.Second):
		t.Fatalf("%v: the standby was not Ready %v after the leader got it; b's stderr:\n%s", sig, bound+time.Second, b.stderr.String())
	}
	leaderEnds(t, a, sig)
	time.Sleep(50 * time.Millisecond) // a few more samples of both
	s.stop()
	if err := s.overlap(); err != nil {
		t.Fatal(err)
	}
	took := s.firstReady(1).Sub(signalled)
	if took > bound {
		t.Errorf("%v: the standby took %v to be Ready, more than TTL %v + 2s", sig, took, ttl)
	}
	if code, body := b.probe("/readyz"); code != http.StatusOK || !strings.Contains(body, "holding "+key) {
		t.Fatalf("the new leader's /readyz: %d %q", code, body)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.waitExit(t, 20*time.Second)
	m := takeover{took: took}
	if !expiry.IsZero() {
		m.afterExpiry, m.measured = s.firstReady(1).Sub(expiry), true
	}
	return m
}

// leaderEnds waits for the old leader a, signalled with sig, to exit as it
// should. SIGSTOPped past its deadline, it is continued: it answers 503
// from its first probe (the sampler is still running), stops its child
// and exits 4.
func leaderEnds(t *testing.T, a *replica, sig syscall.Signal) {
	t.Helper()
	want := -1 // killed: any
	switch sig {
	case syscall.SIGSTOP:
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		want = 4 // lease lost
	case syscall.SIGTERM:
		want = 128 + int(syscall.SIGTERM) // its child's
	}
	if code := a.waitExit(t, 20*time.Second); want >= 0 && code != want {
		t.Fatalf("the old leader exited %d after %v, want %d", code, sig, want)
	}
}

// keyExpiry is when key, held by identity, expires: now plus its PTTL.
// Zero when identity no longer holds it (it ran out before the read).
func keyExpiry(t *testing.T, rc *redis.Client, key, identity string) time.Time {
	t.Helper()
	var (
		value *redis.StringCmd
		pttl  *redis.DurationCmd
	)
	if _, err := rc.TxPipelined(t.Context(), func(p redis.Pipeliner) error {
		value, pttl = p.Get(t.Context(), key), p.PTTL(t.Context(), key)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	now := time.Now()
	if protocol.IdentityFromValue(value.Val()) != identity || pttl.Val() <= 0 {
		return time.Time{}
	}
	return now.Add(pttl.Val())
}

// waitSubscribedTo waits until a client listens on key's events channel: a
// standby waiting for the lock.
func waitSubscribedTo(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	c := srv.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for c.PubSubNumSub(t.Context(), protocol.EventsChannel(key)).Val()[protocol.EventsChannel(key)] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nobody subscribed to %s", protocol.EventsChannel(key))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStandbyTakeover: two `lockctl run --ready-addr` processes on one
// lock, as two replicas of an active/standby Deployment. Exactly one
// answers /readyz 200 at any sample (readiness may be 503 on both for a
// moment, never 200 on both). When the leader's lockctl is SIGKILLed (its
// lease is not released), the standby is Ready once the key's TTL has run
// out; SIGTERMed, the leader releases and the standby is Ready long before
// the TTL; SIGSTOPped past its deadline and continued, the old leader never
// answers 200 again and exits 4. The bounds are functional (TTL + 2 s; a
// third of the TTL for a release): the distribution is logged, for
// docs/lockctl.md (-takeover-runs 10).
func TestStandbyTakeover(t *testing.T) {
	srv := redistest.StartStandalone(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		ttl  time.Duration
		runs int
	}{
		{"SIGKILL", syscall.SIGKILL, time.Second, *takeoverRuns},
		// A long TTL: a takeover within a third of it came from the release.
		{"SIGTERM", syscall.SIGTERM, 30 * time.Second, *takeoverRuns},
		{"SIGSTOP", syscall.SIGSTOP, time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var took, afterExpiry []time.Duration
			for i := range tc.runs {
				m := runTakeover(t, srv, fmt.Sprintf("standby-%s-%d", strings.ToLower(tc.name), i), tc.ttl, tc.sig)
				took = append(took, m.took)
				if m.measured {
					afterExpiry = append(afterExpiry, m.afterExpiry)
					t.Logf("run %d: standby Ready %v after %s, %v after the key expired", i+1, m.took.Round(time.Millisecond), tc.name, m.afterExpiry.Round(time.Millisecond))
				} else {
					t.Logf("run %d: standby Ready %v after %s", i+1, m.took.Round(time.Millisecond), tc.name)
				}
			}
			if tc.sig == syscall.SIGTERM {
				for _, d := range took {
					if d > tc.ttl/3 {
						t.Errorf("takeover after SIGTERM took %v: not the release (TTL %v)", d, tc.ttl)
					}
				}
			}
			slices.Sort(took)
			summary := fmt.Sprintf("%s, TTL %v, %d run(s): standby Ready after min %v, p50 %v, max %v", tc.name, tc.ttl, len(took),
				took[0].Round(time.Millisecond), median(took).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
			if len(afterExpiry) > 0 {
				slices.Sort(afterExpiry)
				summary += fmt.Sprintf("; after the key expired: p50 %v, max %v", median(afterExpiry).Round(time.Millisecond), afterExpiry[len(afterExpiry)-1].Round(time.Millisecond))
			}
			t.Log(summary)
		})
	}
}

// median of sorted ds: the lower middle (nearest rank).
func median(ds []time.Duration) time.Duration { return ds[(len(ds)-1)/2] }

// TestReadyzStates: /readyz is 503 while lockctl waits for the lock, 200
// while COMMAND runs under it, 503 from the SIGTERM on while COMMAND winds
// down (the lease still held), and 503 once the lease is lost while
// COMMAND is still being stopped; /livez is 200 while lockctl runs. A bad
// or busy --ready-addr stops lockctl before COMMAND runs.
func TestReadyzStates(t *testing.T) {
	srv := redistest.StartStandalone(t)
	t.Run("waiting, running, stopping", func(t *testing.T) { readyzWaitingRunningStopping(t, srv) })
	t.Run("lease lost", func(t *testing.T) { readyzLeaseLost(t, srv) })
	t.Run("address", func(t *testing.T) { readyAddrRefused(t, srv) })
}

func readyzWaitingRunningStopping(t *testing.T, srv *redistest.Server) {
	rc := srv.Client(t)
	holder := locktest.New(t, rc, lock.WithTTL(30*time.Second))
	held, err := holder.TryAcquire(t.Context(), "states")
	if err != nil {
		t.Fatal(err)
	}
	// COMMAND takes a second to stop after SIGTERM, once its trap is set:
	// it says so with a file (a SIGTERM before the shell ran `trap` kills it
	// at once).
	r := startReplica(t, "r", `trap 'sleep 1; exit 0' TERM; touch trapped; while :; do sleep 0.05; done`, "--redis", redisURL(srv), "--key", "states")
	r.waitProbe(t, "/livez", http.StatusOK, 10*time.Second)
	if code, body := r.probe("/readyz"); code != http.StatusServiceUnavailable || body != "not ready: waiting for the lock" {
		t.Fatalf("waiting: /readyz %d %q", code, body)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if body := r.waitProbe(t, "/readyz", http.StatusOK, 10*time.Second); !regexp.MustCompile(`^ready: holding states, fence [1-9]\d*$`).MatchString(body) {
		t.Fatalf("running: /readyz body %q", body)
	}
	locktest.WaitFor(t, 5*time.Second, "COMMAND to set its trap", func() bool {
		_, err := os.Stat(filepath.Join(r.cmd.Dir, "trapped"))
		return err == nil
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	body := r.waitProbe(t, "/readyz", http.StatusServiceUnavailable, 5*time.Second)
	h, err := protocol.ReadHolder(t.Context(), protocol.Scripts(rc), "states")
	if err != nil {
		t.Fatal(err)
	}
	if !r.running() || !h.Held || h.Identity != "r" {
		t.Fatalf("after SIGTERM: /readyz 503 must come while COMMAND still runs under the lease (running %v, holder %+v)", r.running(), h)
	}
	if !strings.Contains(body, "stopping") {
		t.Errorf("stopping: /readyz body %q", body)
	}
	if code, _ := r.probe("/livez"); code != http.StatusOK {
		t.Errorf("stopping: /livez %d, want 200 while lockctl runs", code)
	}
	if code := r.waitExit(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d, want COMMAND's 0", code)
	}
	if n := rc.Exists(t.Context(), "states").Val(); n != 0 {
		t.Fatal("the lock was not released")
	}
}

// readyzLeaseLost: COMMAND ignores SIGTERM, so lockctl, having lost the
// lease, runs on until --grace ends with SIGKILL, answering 503 meanwhile.
func readyzLeaseLost(t *testing.T, srv *redistest.Server) {
	r := startReplica(t, "r", `trap "" TERM; while :; do sleep 0.05; done`, "--redis", redisURL(srv), "--key", "lost", "--ttl", "1s", "--grace", "3s")
	r.waitProbe(t, "/readyz", http.StatusOK, 10*time.Second)
	srv.Client(t).Del(t.Context(), "lost")
	body := r.waitProbe(t, "/readyz", http.StatusServiceUnavailable, 5*time.Second)
	if !r.running() {
		t.Fatal("lockctl exited before /readyz was seen 503: the grace should keep it running")
	}
	if !strings.Contains(body, "lease") {
		t.Errorf("lease lost: /readyz body %q", body)
	}
	if code := r.waitExit(t, 20*time.Second); code != 4 {
		t.Fatalf("exit %d, want 4 (lease lost)", code)
	}
}

// readyAddrRefused: an address that is not HOST:PORT exits 2, one in use
// exits 1, and COMMAND does not run.
func readyAddrRefused(t *testing.T, srv *redistest.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // held only to occupy a port
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	ran := filepath.Join(t.TempDir(), "ran")
	for _, tt := range []struct {
		addr string
		want int
	}{
		{"8090", 2},             // no colon: usage
		{ln.Addr().String(), 1}, // in use
	} {
		if r := lockctl(t, "run", "--redis", redisURL(srv), "--key", "addr", "--ready-addr", tt.addr, "--", "touch", ran); r.code != tt.want {
			t.Errorf("--ready-addr %s: exit %d, want %d; stderr:\n%s", tt.addr, r.code, tt.want, r.stderr)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("COMMAND ran although /readyz could not be served")
	}
}

// TestStandbySampleFitsLockctl: the active/standby sample
// (config/samples/standby; the API server accepts it in
// TestSamplesAccepted) probes the port `lockctl run --ready-addr` serves,
// names the holder by its pod, and has a rollout strategy and disruption
// budget that work although only the leader is ever Ready: the Deployment
// may take down every replica (else it keeps the old leader until a new pod
// is Ready, which needs the old leader gone), and the budget's
// desiredHealthy is 0 (else the leader, the only healthy pod, is never
// evictable).
func TestStandbySampleFitsLockctl(t *testing.T) {
	dep, pdb := readStandbySample(t)
	checkSampleProbes(t, dep.Spec.Template.Spec.Containers[0])
	checkSampleAvailability(t, dep, pdb)
}

// readStandbySample returns the sample's Deployment and budget.
func readStandbySample(t *testing.T) (*appsv1.Deployment, *policyv1.PodDisruptionBudget) {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "standby", "lockctl-standby.yaml")) //nolint:gosec // G304: a file of this repository
	if err != nil {
		t.Fatal(err)
	}
	var (
		dep *appsv1.Deployment
		pdb *policyv1.PodDisruptionBudget
	)
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			dep = &appsv1.Deployment{}
			err = yaml.UnmarshalStrict([]byte(doc), dep)
		case "PodDisruptionBudget":
			pdb = &policyv1.PodDisruptionBudget{}
			err = yaml.UnmarshalStrict([]byte(doc), pdb)
		}
		if err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	if dep == nil || pdb == nil {
		t.Fatal("the sample needs a Deployment and a PodDisruptionBudget")
	}
	return dep, pdb
}

// checkSampleProbes: the container runs `lockctl run --ready-addr HOST:P
// ... -- COMMAND`, probes /readyz and /livez on P, and sets POD_NAME.
func checkSampleProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	dash := slices.Index(c.Command, "--")
	if dash < 0 || !slices.Contains(c.Command[:dash], "run") {
		t.Fatalf("command %q is not `lockctl run ... -- COMMAND`", c.Command)
	}
	i := slices.Index(c.Command[:dash], "--ready-addr")
	if i < 0 || i+1 >= dash {
		t.Fatalf("command %q has no --ready-addr", c.Command)
	}
	_, readyPort, err := net.SplitHostPort(c.Command[i+1])
	if err != nil {
		t.Fatal(err)
	}
	port := func(p intstr.IntOrString) string {
		for _, cp := range c.Ports {
			if p.Type == intstr.String && cp.Name == p.StrVal {
				return fmt.Sprint(cp.ContainerPort)
			}
		}
		return p.String()
	}
	for _, pr := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.ReadinessProbe, "/readyz"}, {c.LivenessProbe, "/livez"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path || port(pr.probe.HTTPGet.Port) != readyPort {
			t.Errorf("no probe of %s on --ready-addr's port %s: %+v", pr.path, readyPort, pr.probe)
		}
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Error("no POD_NAME from metadata.name: the holder identity would not name the pod")
	}
}

// checkSampleAvailability: with one Ready pod of N, the rollout's
// minAvailable and the budget's desiredHealthy are 0.
func checkSampleAvailability(t *testing.T, dep *appsv1.Deployment, pdb *policyv1.PodDisruptionBudget) {
	t.Helper()
	replicas := int(*dep.Spec.Replicas)
	if replicas < 2 {
		t.Errorf("%d replicas: no standby", replicas)
	}
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		ru := dep.Spec.Strategy.RollingUpdate
		if ru == nil || ru.MaxUnavailable == nil {
			t.Fatal("RollingUpdate with the default maxUnavailable (25%): the rollout would stop at the old leader")
		}
		if n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicas, true); err != nil || n < replicas {
			t.Errorf("maxUnavailable %s of %d replicas: minAvailable %d > 0, the rollout would stop at the old leader", ru.MaxUnavailable.String(), replicas, replicas-n)
		}
	}
	var (
		desired int
		err     error
	)
	switch {
	case pdb.Spec.MinAvailable != nil:
		desired, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, replicas, true)
	case pdb.Spec.MaxUnavailable != nil:
		var n int
		n, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, replicas, true)
		desired = max(0, replicas-n)
	}
	if err != nil || desired != 0 {
		t.Errorf("the budget's desiredHealthy is %d (%v): the leader, the only Ready pod, could never be evicted", desired, err)
	}
}

package lockctl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// binary is lockctl built from cmd/lockctl: the tests run the real program.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockctl-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "lockctl")
	build := program(context.Background(), "go", "build", "-o", binary, "github.com/redlease/redlease/cmd/lockctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lockctl:", err)
		os.Exit(1)
	}
	code := kubetest.Main(m)
	_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
	os.Exit(code)
}

// program is the one place these tests start a process: the go tool, the
// lockctl binary TestMain built, or the copy `lockctl install` made of it.
func program(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: the go tool, or the lockctl binaries these tests built
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// lockctl runs the binary to completion (bounded by a minute).
func lockctl(t *testing.T, args ...string) result {
	t.Helper()
	cmd := program(t.Context(), binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // the exit code is read from ProcessState
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill() // fails only if it has exited meanwhile: done then closes all the same
		<-done
		t.Fatalf("lockctl %v did not finish in a minute; stderr:\n%s", args, errb.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
}

func redisURL(s *redistest.Server) string { return "redis://" + s.Addr() }

var lockValue = regexp.MustCompile(`/[0-9a-f]{40}`)

func TestRunGivesTheChildItsLockButNotTheValueAndPassesItsExitCode(t *testing.T) {
	srv := redistest.StartStandalone(t)
	r := lockctl(t, "run", "--redis", redisURL(srv), "--key", "report", "--identity", "cron-1", "--",
		"sh", "-c", `echo "key=$LOCK_KEY fence=$LOCK_FENCE holder=$LOCK_HOLDER"; env; exit 7`)
	if r.code != 7 {
		t.Fatalf("exit code %d, want the child's 7; stderr:\n%s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`key=report fence=(\d+) holder=cron-1`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("child did not see its lock: %q", r.stdout)
	}
	if fence, _ := strconv.ParseUint(m[1], 10, 64); fence == 0 {
		t.Fatal("LOCK_FENCE is 0")
	}
	if lockValue.MatchString(r.stdout) {
		t.Fatal("the lock value leaked into the child's environment")
	}
	if n := srv.Client(t).Exists(t.Context(), "report").Val(); n != 0 {
		t.Fatal("lockctl did not release the lock when the child exited")
	}
}

func TestExitCodes(t *testing.T) {
	srv := redistest.StartStandalone(t)
	holder := locktest.New(t, srv.Client(t), lock.WithTTL(30*time.Second))
	lease, err := holder.TryAcquire(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, lease)
	url := redisURL(srv)

	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"no command", []string{"run", "--redis", url, "--key", "k"}, 2},
		{"no lock named", []string{"run", "--", "true"}, 2},
		{"both kinds of lock", []string{"run", "--lock", "a/b", "--redis", url, "--key", "k", "--", "true"}, 2},
		{"unknown flag", []string{"run", "--nope", "--", "true"}, 2},
		{"shared semaphore", []string{"run", "--redis", url, "--key", "k", "--permits", "3", "--shared", "--", "true"}, 2},
		{"even Redlock", []string{"run", "--redis", url + "," + url, "--key", "k", "--", "true"}, 2},
		{"held, no wait", []string{"run", "--redis", url, "--key", "held", "--wait", "0", "--", "true"}, 3},
		{"held, wait runs out", []string{"run", "--redis", url, "--key", "held", "--wait", "200ms", "--", "true"}, 3},
		{"command not found", []string{"run", "--redis", url, "--key", "k", "--", "/nonexistent/job"}, 127},
		{"killed by a signal", []string{"run", "--redis", url, "--key", "k", "--", "sh", "-c", "kill -9 $$"}, 128 + 9},
		{"success", []string{"run", "--redis", url, "--key", "k", "--", "true"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := lockctl(t, tt.args...); r.code != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
}

// startRun starts `lockctl run` whose child prints its pid and sleeps; it
// returns the command and the child's pid.
func startRun(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	cmd := program(t.Context(), binary, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no pid from the child: %v; stderr:\n%s", err, errb.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, &errb, pid
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // the exit code is read from ProcessState
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("lockctl still running after %v", within)
		return -1
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A lost lease stops the child and makes lockctl fail: the key deleted from
// outside (seen at the next renewal), or Redis paused past the TTL (seen by
// the local deadline, Redis never answering).
func TestLostLeaseTerminatesTheChild(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lose  func(*redistest.Server)
		extra []string
		child string
	}{
		{"key deleted from outside", func(s *redistest.Server) { s.Client(t).Del(t.Context(), "job") }, nil, "echo $$; exec sleep 60"},
		{"redis paused past the TTL", func(s *redistest.Server) { s.Pause(); t.Cleanup(s.Resume) }, nil, "echo $$; exec sleep 60"},
		// A child that ignores SIGTERM is killed after --grace.
		{"child ignores SIGTERM", func(s *redistest.Server) { s.Client(t).Del(t.Context(), "job") },
			[]string{"--grace", "300ms"}, `trap "" TERM; echo $$; while :; do sleep 0.1; done`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			args := append([]string{"run", "--redis", redisURL(srv), "--key", "job", "--ttl", "1s"}, tt.extra...)
			cmd, stderr, pid := startRun(t, append(args, "--", "sh", "-c", tt.child)...)
			tt.lose(srv)
			if code := waitExit(t, cmd, 10*time.Second); code != 4 {
				t.Fatalf("exit %d, want 4 (lease lost); stderr:\n%s", code, stderr.String())
			}
			if alive(pid) {
				t.Fatal("the child outlived the lease")
			}
			if !strings.Contains(stderr.String(), "lease on job lost") {
				t.Fatalf("no clear message; stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestMaxHold: --max-hold caps a lease however alive lockctl is: run stops
// COMMAND once the lease reaches it and exits 4 with a message that says
// so, acquire exits 4, and the key is free for the next holder then. A cap
// no longer than the TTL, or one given with --lock (a DistributedLock
// brings its own spec.maxHold), is a usage error.
func TestMaxHold(t *testing.T) {
	srv := redistest.StartStandalone(t)
	url := redisURL(srv)

	t.Run("run", func(t *testing.T) {
		start := time.Now()
		cmd, stderr, pid := startRun(t, "run", "--redis", url, "--key", "stuck", "--ttl", "500ms", "--max-hold", "2s", "--",
			"sh", "-c", "echo $$; exec sleep 60")
		if code := waitExit(t, cmd, 20*time.Second); code != 4 {
			t.Fatalf("exit %d, want 4 (lease lost at its max hold); stderr:\n%s", code, stderr.String())
		}
		// At least max hold - ttl: renewed past its TTL, ended by the cap.
		if held := time.Since(start); held < 1500*time.Millisecond {
			t.Fatalf("exited after %v, before its max hold 2s (ttl 500ms); stderr:\n%s", held, stderr.String())
		}
		if alive(pid) {
			t.Fatal("the child outlived the lease")
		}
		for _, want := range []string{"lease on stuck lost while sh ran", "max hold time reached (the cap that --max-hold"} {
			if !strings.Contains(stderr.String(), want) {
				t.Fatalf("stderr does not say %q:\n%s", want, stderr.String())
			}
		}
		if r := lockctl(t, "run", "--redis", url, "--key", "stuck", "--wait", "5s", "--", "true"); r.code != 0 {
			t.Fatalf("the next run could not take the lock after the capped lease: exit %d; stderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("acquire", func(t *testing.T) {
		r := lockctl(t, "acquire", "--redis", url, "--key", "debugging", "--ttl", "500ms", "--max-hold", "1s", "--hold", "30s")
		if r.code != 4 || !strings.Contains(r.stderr, "max hold time reached") {
			t.Fatalf("exit %d, want 4 saying max hold; stderr:\n%s", r.code, r.stderr)
		}
		if r.took > 15*time.Second {
			t.Fatalf("acquire --max-hold 1s --hold 30s held for %v", r.took)
		}
	})

	for _, tt := range []struct {
		name string
		args []string
		says string
	}{
		{"equal to --ttl", []string{"--redis", url, "--key", "k", "--ttl", "1s", "--max-hold", "1s"}, "--max-hold 1s must be longer than --ttl 1s"},
		{"below the default TTL", []string{"--redis", url, "--key", "k", "--max-hold", "10s"}, "--max-hold 10s must be longer than --ttl 30s"},
		{"negative", []string{"--redis", url, "--key", "k", "--max-hold", "-1h"}, "--max-hold -1h0m0s must be longer than --ttl"},
		{"with a DistributedLock", []string{"--lock", "billing/settle", "--max-hold", "1h"}, "a DistributedLock brings its own spec.maxHold"},
	} {
		t.Run("refused "+tt.name, func(t *testing.T) {
			r := lockctl(t, append(append([]string{"run"}, tt.args...), "--", "true")...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.says) {
				t.Fatalf("exit %d, want 2 saying %q; stderr:\n%s", r.code, tt.says, r.stderr)
			}
		})
	}
}

// Two `lockctl run` on one lock run their children strictly one after the
// other.
func TestConcurrentRunsAreSerialized(t *testing.T) {
	srv := redistest.StartStandalone(t)
	journal := filepath.Join(t.TempDir(), "journal")
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Go(func() {
			r := lockctl(t, "run", "--redis", redisURL(srv), "--key", "serial", "--wait", "30s", "--",
				"sh", "-c", fmt.Sprintf(`echo start %d >> %s; sleep 0.3; echo end %d >> %s`, i, journal, i, journal))
			codes[i] = r.code
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("run %d exited %d", i, c)
		}
	}
	data, err := os.ReadFile(journal) //nolint:gosec // G304: the test's own file in t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(strings.ReplaceAll(string(data), "\n", " "))
	if len(lines) != 12 {
		t.Fatalf("journal %q: want 3 start/end pairs", data)
	}
	for i := 0; i < len(lines); i += 4 {
		if lines[i] != "start" || lines[i+2] != "end" || lines[i+1] != lines[i+3] {
			t.Fatalf("children overlapped: %q", data)
		}
	}
}

// Through a DistributedLock: the key and the server come from its status,
// the password from the credentials Secret the status names (what the
// controller publishes), status reports them with the store and the
// holder, and a resource that is not Ready exits 5.
func TestKubernetesMode(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	key := ns + "/nightly-run"
	dl := publishLock(t, env, ns, "nightly", key, srv.Addr(), "s3cret")

	r := lockctl(t, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/nightly", "--", "sh", "-c", `echo "$LOCK_KEY"`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != key {
		t.Fatalf("run: exit %d, stdout %q (want status.key %q), stderr:\n%s", r.code, r.stdout, key, r.stderr)
	}

	cmd, _, _ := startRun(t, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/nightly", "--identity", "holder-9", "--", "sh", "-c", "echo $$; exec sleep 30")
	checkStatus(t, kubeconfig, ns+"/nightly", key, srv.Addr())
	_ = cmd.Process.Signal(syscall.SIGTERM) // forwarded to the child; lockctl then releases
	if code := waitExit(t, cmd, 10*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("lockctl after SIGTERM exited %d, want the child's 143", code)
	}

	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonEndpointUnreachable, Message: "connection refused"})
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	// --wait 0 fails at once; --wait D waits for Ready within D, then fails
	// with exit 5 naming the reason.
	for _, wait := range []string{"0", "1s"} {
		if r := lockctl(t, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/nightly", "--wait", wait, "--", "true"); r.code != 5 || !strings.Contains(r.stderr, "EndpointUnreachable") {
			t.Fatalf("not Ready, --wait %s: exit %d, stderr %q; want 5 naming the reason", wait, r.code, r.stderr)
		}
	}
	// A lock that becomes Ready while lockctl waits (applied with its
	// CronJob) is taken.
	waited := make(chan result, 1)
	go func() {
		waited <- lockctl(t, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/nightly", "--wait", "30s", "--", "sh", "-c", `echo "took $LOCK_KEY"`)
	}()
	time.Sleep(500 * time.Millisecond)
	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable})
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	if r := <-waited; r.code != 0 || strings.TrimSpace(r.stdout) != "took "+key {
		t.Fatalf("--wait 30s on a lock that became Ready: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// Several --lock of one store are taken together; the child gets
	// their keys and fences in the order of the flags.
	publishLock(t, env, ns, "weekly", ns+"/weekly-run", srv.Addr(), "s3cret")
	r = lockctl(t, "run", "--kubeconfig", kubeconfig, "-n", ns, "--lock", "weekly", "--lock", ns+"/nightly", "--", "sh", "-c", `echo "$LOCK_KEY|$LOCK_FENCE"`)
	if m := regexp.MustCompile(`^(\S+) (\S+)\|[1-9]\d* [1-9]\d*$`).FindStringSubmatch(strings.TrimSpace(r.stdout)); r.code != 0 || m == nil || m[1] != ns+"/weekly-run" || m[2] != key {
		t.Fatalf("run --lock weekly --lock nightly: exit %d, stdout %q (want both keys, weekly's first, and two fences), stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// publishLock creates the DistributedLock ns/name on the ClusterLockStore
// "shared" and publishes what the controller would: the credentials
// Secret with password, and a Ready status with key and the server addr.
func publishLock(t *testing.T, env *kubetest.Env, ns, name, key, addr, password string) *v1alpha1.DistributedLock {
	t.Helper()
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DistributedLockSpec{StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"}}}
	if err := env.Client.Create(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redlease-shared"},
		Data: map[string][]byte{v1alpha1.CredentialsPassword: []byte(password)}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err) // a second lock of the namespace shares the first one's Secret
	}
	dl.Status = v1alpha1.DistributedLockStatus{Key: key,
		Connection:           &v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}},
		CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "redlease-shared"}}
	apimeta.SetStatusCondition(&dl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable})
	if err := env.Client.Status().Update(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	return dl
}

// checkStatus: `lockctl status` (JSON and table) reports the lock's key
// and server from its status, its store, and the holder holder-9 with a
// fence, never the lock value or a password.
func checkStatus(t *testing.T, kubeconfig, lock, key, addr string) {
	t.Helper()
	st := lockctl(t, "status", lock, "--kubeconfig", kubeconfig, "-o", "json")
	var report struct {
		Key, Mode, Store, Ready, Holder string
		Addresses                       []string
		Held                            bool
		Fence                           uint64
	}
	if err := json.Unmarshal([]byte(st.stdout), &report); err != nil {
		t.Fatalf("status -o json: %v: %q %s", err, st.stdout, st.stderr)
	}
	if report.Key != key || report.Mode != "Standalone" || len(report.Addresses) != 1 || report.Addresses[0] != addr ||
		report.Store != "ClusterLockStore/shared" || report.Ready != "True" || !report.Held || report.Holder != "holder-9" || report.Fence == 0 {
		t.Fatalf("status = %+v", report)
	}
	if lockValue.MatchString(st.stdout) || strings.Contains(st.stdout, "s3cret") {
		t.Fatal("status printed the lock value or the password")
	}
	table := lockctl(t, "status", lock, "--kubeconfig", kubeconfig)
	for _, want := range []string{"HOLDER", "holder-9", key, addr, "ClusterLockStore/shared"} {
		if !strings.Contains(table.stdout, want) {
			t.Fatalf("status table has no %q:\n%s", want, table.stdout)
		}
	}
}

// TestStatusShowsTheHolderPod: `lockctl status` shows the holder's pod and
// node from status.holder when it names the holder Redis has, and neither
// when the controller's observation lags behind (another identity).
func TestStatusShowsTheHolderPod(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	dl := publishLock(t, env, ns, "web", ns+"/web", srv.Addr(), "")
	cmd, _, _ := startRun(t, "run", "--kubeconfig", kubeconfig, "--lock", ns+"/web", "--identity", "web-7f9c-a:1", "--", "sh", "-c", "echo $$; exec sleep 30")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); waitExit(t, cmd, 10*time.Second) }()

	for _, tc := range []struct {
		observed        string // status.holder.identity
		wantPod, wantNd string
	}{
		{"web-7f9c-a:1", "web-7f9c-a", "node-a"},
		{"web-7f9c-old:1", "", ""}, // the controller has not seen the new holder yet
	} {
		dl.Status.Holder = &v1alpha1.LockHolder{Identity: tc.observed, Fence: 1, Since: metav1.Now(), Pod: strings.TrimSuffix(tc.observed, ":1"), Node: "node-a"}
		if err := env.Client.Status().Update(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
		st := lockctl(t, "status", ns+"/web", "--kubeconfig", kubeconfig, "-o", "json")
		var report struct{ Holder, Pod, Node string }
		if err := json.Unmarshal([]byte(st.stdout), &report); err != nil {
			t.Fatalf("status -o json: %v: %q %s", err, st.stdout, st.stderr)
		}
		if report.Holder != "web-7f9c-a:1" || report.Pod != tc.wantPod || report.Node != tc.wantNd {
			t.Errorf("status.holder %s: report %+v, want holder web-7f9c-a:1 pod %q node %q", tc.observed, report, tc.wantPod, tc.wantNd)
		}
		table := lockctl(t, "status", ns+"/web", "--kubeconfig", kubeconfig).stdout
		if !strings.Contains(table, "POD") || !strings.Contains(table, "NODE") || (tc.wantPod != "" && !regexp.MustCompile(`web-7f9c-a:1\s+web-7f9c-a\s+node-a\s`).MatchString(table)) {
			t.Errorf("status table:\n%s", table)
		}
	}
}

// --redis URLs carry a password, a database and TLS; a refused URL is a
// usage error that never prints its password.
func TestRedisURLs(t *testing.T) {
	plain := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	secure := redistest.StartStandalone(t, redistest.WithTLS())
	for _, c := range []struct {
		name string
		url  string
		srv  *redistest.Server
		db   int
	}{
		{"password and database", "redis://:s3cret@" + plain.Addr() + "/2", plain, 2},
		{"TLS", "rediss://" + secure.Addr() + "?skip_verify=true", secure, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, stderr, _ := startRun(t, "run", "--redis", c.url, "--key", "url-job", "--", "sh", "-c", "echo $$; exec sleep 30")
			rc := c.srv.Client(t, func(o *redis.Options) { o.DB = c.db })
			if n := rc.Exists(t.Context(), "url-job").Val(); n != 1 {
				t.Fatalf("the lock is not in database %d; stderr:\n%s", c.db, stderr.String())
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			waitExit(t, cmd, 10*time.Second)
		})
	}
	for _, bad := range []string{"redis://:s3cret@" + plain.Addr() + "?dial_timeout=3", "redis://:s3cret@host:port", "http://:s3cret@" + plain.Addr()} {
		r := lockctl(t, "run", "--redis", bad, "--key", "k", "--", "true")
		if r.code != 2 || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("--redis %s: exit %d, stderr %q; want 2 without the password", bad, r.code, r.stderr)
		}
	}
}

func TestInstallCopiesTheBinary(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "lockctl")
	if r := lockctl(t, "install", dest); r.code != 0 {
		t.Fatalf("install: exit %d: %s", r.code, r.stderr)
	}
	out, err := program(t.Context(), dest, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Exit codes") {
		t.Fatalf("installed copy does not run: %v\n%s", err, out)
	}
}

// The CronJob sample (config/samples/cronjob) is accepted by the API server.
func TestCronJobSampleIsValid(t *testing.T) {
	env := kubetest.Shared(t)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "cronjob", "lockctl-cronjob.yaml")) //nolint:gosec // G304: a file of this repository
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "billing"}}
	if err := env.Client.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(t.Context(), u, client.DryRunAll); err != nil {
			t.Fatalf("%s %s refused: %v", u.GetKind(), u.GetName(), err)
		}
		kinds[u.GetKind()] = true
	}
	for _, k := range []string{"CronJob", "Role", "RoleBinding", "ServiceAccount"} {
		if !kinds[k] {
			t.Errorf("sample has no %s", k)
		}
	}
}

// run --shared: two shared runs hold the lock at once; a run without
// --shared waits for both; a shared run that comes while it waits waits
// behind it (writer preference); each child sees LOCK_SHARED.
func TestSharedRunsOverlapAndAWriterRunsAlone(t *testing.T) {
	srv := redistest.StartStandalone(t)
	journal := filepath.Join(t.TempDir(), "journal")
	run := func(name string, shared bool, hold string) <-chan result {
		args := []string{"run", "--redis", redisURL(srv), "--key", "catalog", "--wait", "30s"}
		if shared {
			args = append(args, "--shared")
		}
		args = append(args, "--", "sh", "-c", fmt.Sprintf(`echo start %s $LOCK_SHARED >> %s; sleep %s; echo end %s x >> %s`, name, journal, hold, name, journal))
		got := make(chan result, 1)
		go func() { got <- lockctl(t, args...) }()
		return got
	}
	lines := func() []string {
		data, _ := os.ReadFile(journal) //nolint:gosec // G304: the test's own file in t.TempDir()
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	admin := srv.Client(t)
	r1, r2 := run("r1", true, "1"), run("r2", true, "1")
	locktest.WaitFor(t, 20*time.Second, "both shared runs to start", func() bool { return len(lines()) >= 2 })
	w := run("w", false, "0.2")
	locktest.WaitFor(t, 20*time.Second, "the writer to queue", func() bool { return admin.ZCard(t.Context(), "{catalog}:line").Val() == 1 })
	r3 := run("r3", true, "0.1")
	for _, got := range []<-chan result{r1, r2, w, r3} {
		if r := <-got; r.code != 0 {
			t.Fatalf("a run exited %d; stderr:\n%s", r.code, r.stderr)
		}
	}
	var order []string
	for _, l := range lines() {
		f := strings.Fields(l)
		order = append(order, f[0]+" "+f[1])
		if f[0] == "start" && f[2] != map[bool]string{true: "true", false: "false"}[f[1] != "w"] {
			t.Errorf("%s saw LOCK_SHARED=%s", f[1], f[2])
		}
	}
	got := strings.Join(order, ", ")
	for _, want := range []string{"start r1, start r2, end r1, end r2, start w, end w, start r3, end r3",
		"start r1, start r2, end r2, end r1, start w, end w, start r3, end r3",
		"start r2, start r1, end r1, end r2, start w, end w, start r3, end r3",
		"start r2, start r1, end r2, end r1, start w, end w, start r3, end r3"} {
		if got == want {
			return
		}
	}
	t.Fatalf("journal order %s: want both readers together, then the writer alone, then the last reader", got)
}

// Several --key are taken all or none: a run waits while another holder
// has one of its keys, runs once both are free with both keys and fences
// in its environment, and two runs naming the keys in opposite orders
// never deadlock and never hold at once.
func TestSeveralLocksRunAllOrNone(t *testing.T) {
	srv := redistest.StartStandalone(t)
	url := redisURL(srv)
	journal := filepath.Join(t.TempDir(), "journal")
	holder := locktest.New(t, srv.Client(t), lock.WithTTL(30*time.Second))
	lease, err := holder.TryAcquire(t.Context(), "account-42")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, keys ...string) <-chan result {
		args := []string{"run", "--redis", url, "--wait", "30s"}
		for _, k := range keys {
			args = append(args, "--key", k)
		}
		args = append(args, "--", "sh", "-c", fmt.Sprintf(`echo "start %s $LOCK_KEY|$LOCK_FENCE" >> %s; sleep 0.2; echo "end %s" >> %s`, name, journal, name, journal))
		got := make(chan result, 1)
		go func() { got <- lockctl(t, args...) }()
		return got
	}
	lines := func() []string {
		data, _ := os.ReadFile(journal) //nolint:gosec // G304: the test's own file in t.TempDir()
		return strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' })
	}
	a := run("a", "account-17", "account-42")
	locktest.WaitFor(t, 20*time.Second, "the run to queue for the held key", func() bool {
		return srv.Client(t).ZCard(t.Context(), "{account-42}:line").Val() == 1
	})
	b := run("b", "account-42", "account-17")
	time.Sleep(300 * time.Millisecond)
	if l := lines(); len(l) != 0 {
		t.Fatalf("a run started while another holder had one of its keys: %q", l)
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, got := range []<-chan result{a, b} {
		if r := <-got; r.code != 0 {
			t.Fatalf("a run exited %d; stderr:\n%s", r.code, r.stderr)
		}
	}
	l := lines()
	start := regexp.MustCompile(`^start a account-17 account-42\|[1-9]\d* [1-9]\d*$`)
	if len(l) != 4 || !start.MatchString(l[0]) || l[1] != "end a" || !strings.HasPrefix(l[2], "start b account-42 account-17|") || l[3] != "end b" {
		t.Fatalf("journal %q: want a (first in line) alone with both keys and fences, then b alone", l)
	}

	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"shared", []string{"--key", "x", "--key", "y", "--shared"}, 2},
		{"semaphore", []string{"--key", "x", "--key", "y", "--permits", "3"}, 2},
		{"whitespace in a key", []string{"--key", "x", "--key", "y z"}, 2},
		{"held, no wait", []string{"--key", "x", "--key", "held", "--wait", "0"}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "held, no wait" {
				lease, err := holder.TryAcquire(t.Context(), "held")
				if err != nil {
					t.Fatal(err)
				}
				locktest.ReleaseAtEnd(t, lease)
			}
			args := append(append([]string{"run", "--redis", url}, tt.args...), "--", "true")
			if r := lockctl(t, args...); r.code != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if n := srv.Client(t).Exists(t.Context(), "x").Val(); n != 0 {
				t.Fatal("a refused run left a key held")
			}
		})
	}
	if r := lockctl(t, "run", "--redis", url+","+url, "--key", "x", "--key", "y", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "Redlock") {
		t.Fatalf("several keys on Redlock: exit %d, stderr %q; want 2 naming Redlock", r.code, r.stderr)
	}
}

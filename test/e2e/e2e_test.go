// Package e2e installs redlease the ways users do — `helm install` of the
// chart, `kubectl apply -k config/default` — into a real API server (envtest,
// source-built), runs the manager binary out of cluster AS THE INSTALLED
// ServiceAccount (impersonation: the installed RBAC must be enough), applies
// the samples against real Redis, and checks they become Ready, lockctl
// works against them, and uninstalling removes what it should.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

var root, binDir string

func TestMain(m *testing.M) {
	var err error
	if root, err = kubetest.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	for _, c := range []string{"manager", "lockctl", "demo"} {
		build := program(context.Background(), "go", "build", "-o", filepath.Join(dir, c), "./cmd/"+c)
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", c, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // a temporary directory: leaving it behind fails nothing
	os.Exit(code)
}

// program is the one place these tests start a process: the go tool, the
// tools in bin/ (helm, kubectl, built from source by make tools), and the
// binaries TestMain built from ./cmd.
func program(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: the go tool, bin/ tools and this repository's own binaries
}

// run runs a tool from bin/ (helm, kubectl) and fails t on error.
func run(t *testing.T, tool string, args ...string) string {
	t.Helper()
	cmd := program(t.Context(), filepath.Join(root, "bin", tool), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", tool, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// managerProcess is a manager startManager started.
type managerProcess struct {
	cmd *exec.Cmd
	log *syncBuffer
}

// syncBuffer is the manager's output, written by exec's copying goroutine
// and read by the test while the manager runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// kill SIGKILLs the manager, as a crash or an OOM kill would: it releases
// nothing (its leader election Lease stays as it last wrote it).
func (m *managerProcess) kill(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// startManager runs bin/manager out of cluster with the given kubeconfig
// and the arguments the installed Deployment gives it, then extra.
func startManager(t *testing.T, kubeconfig, namespace string, extra ...string) *managerProcess {
	t.Helper()
	var log syncBuffer
	// Not t.Context(): that is cancelled before the cleanup below, which
	// stops the manager gracefully (SIGTERM, then SIGKILL after 10s).
	args := append([]string{"--leader-elect", "--leader-election-namespace=" + namespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--probe-interval=2s"}, extra...)
	cmd := program(context.Background(), filepath.Join(binDir, "manager"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", log.String())
		}
	})
	return &managerProcess{cmd: cmd, log: &log}
}

// localTopologies start the Redis servers the samples are rewritten to.
type localTopologies struct {
	standalone *redistest.Server
	replicated *redistest.Replicated
	sentinel   *redistest.Sentinel
	cluster    *redistest.Cluster
	nodes      []*redistest.Server
}

const password = "e2e-secret"

func startTopologies(t *testing.T) *localTopologies {
	pw := redistest.WithPassword(password)
	lt := &localTopologies{
		standalone: redistest.StartStandalone(t),
		replicated: redistest.StartReplicated(t, 1, pw),
		sentinel:   redistest.StartSentinel(t, 1, pw),
		cluster:    redistest.StartCluster(t, pw, redistest.WithClusterReplicas(1)),
		nodes:      redistest.StartNodes(t, 5),
	}
	// The Sentinel sample asks for min-replicas-to-write 1 without letting
	// the controller manage it: configure the servers, as its owner would.
	for _, s := range append([]*redistest.Server{lt.sentinel.Master}, lt.sentinel.Replicas...) {
		if err := s.Client(t).ConfigSet(t.Context(), "min-replicas-to-write", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	return lt
}

// localize keeps a sample's mode, key, TTL, safety and fencing settings and
// points its connection at the local servers: the samples name in-cluster
// hosts, TLS and an ACL user that the local servers do not have.
func (lt *localTopologies) localize(dl *v1alpha1.DistributedLock) {
	r := &dl.Spec.Redis
	r.Username, r.TLS, r.Service = "", nil, nil
	switch r.Mode {
	case v1alpha1.RedisModeStandalone:
		r.Addresses, r.PasswordSecretRef = []string{lt.standalone.Addr()}, nil
	case v1alpha1.RedisModeReplicated:
		r.Addresses = []string{lt.replicated.Master.Addr()}
	case v1alpha1.RedisModeSentinel:
		r.Sentinel = &v1alpha1.SentinelSpec{MasterName: lt.sentinel.MasterName, Addresses: lt.sentinel.SentinelAddrs()}
	case v1alpha1.RedisModeCluster:
		r.Addresses = lt.cluster.Addrs()
	case v1alpha1.RedisModeRedlock:
		r.Addresses = nil
		for _, n := range lt.nodes {
			r.Addresses = append(r.Addresses, n.Addr())
		}
	}
	if r.PasswordSecretRef != nil {
		r.PasswordSecretRef.Key = "password"
	}
	// The local servers have only the default user: the controller uses
	// the pods' credentials (a separate controllerAuth is covered by the
	// controller's store tests).
	dl.Spec.ControllerAuth = nil
}

// applySamples creates every DistributedLock sample, localized, in ns with
// the Secrets they name, and returns their names.
func applySamples(t *testing.T, c client.Client, lt *localTopologies, ns string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "redlease_v1alpha1_distributedlock_*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("samples: %v (%d files)", err, len(files))
	}
	secrets := map[string]bool{}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f) //nolint:gosec // G304: a sample of this repository, from the Glob above
		if err != nil {
			t.Fatal(err)
		}
		var dl v1alpha1.DistributedLock
		if err := yaml.UnmarshalStrict(data, &dl); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !dl.Spec.Inline() {
			// Locks on a store need the store's sample with its servers
			// and tenants; the API tests apply them and the controller's
			// store tests run them against real Redis. This test covers
			// the inline samples.
			continue
		}
		lt.localize(&dl)
		dl.Namespace = ns
		if ref := dl.Spec.Redis.PasswordSecretRef; ref != nil && !secrets[ref.Name] {
			secrets[ref.Name] = true
			if err := c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ref.Name},
				StringData: map[string]string{"password": password}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(t.Context(), &dl); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		names = append(names, dl.Name)
	}
	return names
}

func waitReady(t *testing.T, c client.Client, ns string, names []string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for _, name := range names {
		for {
			var dl v1alpha1.DistributedLock
			err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dl)
			if err == nil && apimeta.IsStatusConditionTrue(dl.Status.Conditions, v1alpha1.ConditionReady) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not Ready: %+v", ns, name, dl.Status.Conditions)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// lockctlRuns checks `lockctl run` against a Ready lock.
func lockctlRuns(t *testing.T, kubeconfig, ns, name string) {
	t.Helper()
	out, err := program(t.Context(), filepath.Join(binDir, "lockctl"), "run", "--kubeconfig", kubeconfig, "--lock", ns+"/"+name,
		"--wait", "30s", "--", "sh", "-c", `echo "fence=$LOCK_FENCE"`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fence=") || strings.Contains(string(out), "fence=\n") {
		t.Fatalf("lockctl run on %s/%s: %v\n%s", ns, name, err, out)
	}
}

func serviceAccountOf(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	var sas corev1.ServiceAccountList
	if err := c.List(t.Context(), &sas, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, sa := range sas.Items {
		if strings.HasSuffix(sa.Name, "controller-manager") {
			return sa.Name
		}
	}
	t.Fatalf("no controller-manager ServiceAccount in %s: %+v", ns, sas.Items)
	return ""
}

func crdExists(t *testing.T, c client.Client) bool {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err := c.Get(context.Background(), client.ObjectKey{Name: "distributedlocks.redlease.io"}, crd)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestHelmInstall(t *testing.T) {
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	admin := env.KubeconfigFile(t)
	const ns = "redlease-system"
	run(t, "helm", "install", "redlease", filepath.Join(root, "charts", "redlease"), "-n", ns, "--create-namespace", "--kubeconfig", admin)
	if !crdExists(t, env.Client) {
		t.Fatal("helm install did not install the CRD")
	}
	sa := serviceAccountOf(t, env.Client, ns)
	startManager(t, env.KubeconfigAsServiceAccount(t, ns, sa), ns)

	lt := startTopologies(t)
	work := env.Namespace(t)
	names := applySamples(t, env.Client, lt, work)
	waitReady(t, env.Client, work, names)
	lockctlRuns(t, admin, work, names[0])

	// --no-hooks: no kubelet runs the post-delete hook's Job on envtest
	// (helm would wait for it); make test-node's scenario 9 runs it.
	run(t, "helm", "uninstall", "redlease", "-n", ns, "--kubeconfig", admin, "--no-hooks")
	if !crdExists(t, env.Client) {
		t.Fatal("helm uninstall removed the CRD although crds.keep is on")
	}
	var sas corev1.ServiceAccount
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sa}, &sas); !apierrors.IsNotFound(err) {
		t.Fatalf("ServiceAccount %s after uninstall: %v", sa, err)
	}
	out := run(t, "helm", "list", "-A", "--kubeconfig", admin)
	if strings.Contains(out, "redlease") {
		t.Fatalf("release still listed:\n%s", out)
	}
}

func TestKustomizeDeploy(t *testing.T) {
	env := kubetest.Start(t, kubetest.WithoutCRDs())
	admin := env.KubeconfigFile(t)
	run(t, "kubectl", "--kubeconfig", admin, "apply", "-k", filepath.Join(root, "config", "default"))
	if !crdExists(t, env.Client) {
		t.Fatal("kubectl apply -k did not install the CRD")
	}
	const ns = "redlease-system"
	sa := serviceAccountOf(t, env.Client, ns)
	startManager(t, env.KubeconfigAsServiceAccount(t, ns, sa), ns)

	srv := redistest.StartStandalone(t)
	work := env.Namespace(t)
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: work, Name: "report-generator"},
		Spec: v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}}}}
	if err := env.Client.Create(t.Context(), dl); err != nil {
		t.Fatal(err)
	}
	waitReady(t, env.Client, work, []string{dl.Name})
	lockctlRuns(t, admin, work, dl.Name)

	run(t, "kubectl", "--kubeconfig", admin, "delete", "--wait=false", "-k", filepath.Join(root, "config", "default"))
}

// make demo, shortened: it must finish on its own, show the paused holder's
// late write refused, find no lost update in either tenant's ledger, and
// show one tenant's credentials refused on the other's lock.
func TestDemo(t *testing.T) {
	cmd := program(t.Context(), filepath.Join(binDir, "demo"), "--bin", binDir, "--duration", "12s")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"billing/settlement is Ready", "reports/settlement is Ready", "paused bil-", "late writes refused by the fence", "no update lost",
		"isolation: with billing's credentials", "taking reports/settlement is refused: NOPERM"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`billing: \d+ increments accepted, 0 late writes refused`).Match(out) {
		t.Fatalf("the paused holder's write was not refused:\n%s", out)
	}
}

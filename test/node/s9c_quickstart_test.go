/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redisconn/certtest"

	"sigs.k8s.io/yaml"
)

// quickstartBlocks are the command blocks of README.md's quick start, in
// the order a reader runs them: each is the ```sh block after an HTML
// comment "<!-- quickstart: NAME -->".
var quickstartBlocks = []string{"install", "lock", "check", "cleanup"}

// TestScenario9cQuickStart: README's quick start, run verbatim on a
// cluster with no redlease (after 9b), against the release published the
// way users fetch it: its images, its chart and the Redis image the chart
// names are pushed to the scenarios' registry, which answers for ghcr.io
// (helm, through HTTPS and a hosts entry that only the README's shell sees)
// and for every registry (containerd's mirror). The lock pod holds the
// lock with a fence, and holds it again after the Redis container is
// killed (the controller's user comes back from the aclfile, a tenant's
// from the controller); then README's Go snippet, compiled into a program,
// runs in a pod of the quick start's namespace, waits for the lock and
// gets a greater fence; the README's cleanup leaves nothing of the release
// but the CRDs (kept, as documented). A second run on the same cluster
// shows that an uninstall leaves nothing in the way. Any edit of README
// that breaks a command fails here.
func TestScenario9cQuickStart(t *testing.T) {
	cs := cluster(t)
	if out := kubectl(t, "get", "crd", "-o", "name"); strings.Contains(out, "redlease.io") {
		t.Fatalf("needs a cluster without redlease (after scenario 9b): %s", out)
	}
	blocks := readmeBlocks(t, root)
	before := releaseObjects(t)
	shell := publishQuickstart(t)
	t.Cleanup(func() {
		_, _ = kubectlIn(t.Context(), "delete", "crd", "distributedlocks.redlease.io", "lockstores.redlease.io", "clusterlockstores.redlease.io", "lockreleases.redlease.io", "--ignore-not-found", "--timeout=1m")
	})

	for run := 1; run <= 2; run++ {
		start := time.Now()
		for _, name := range quickstartBlocks[:3] {
			shell.run(t, name, blocks[name])
		}
		t.Logf("MEASURE quick start run %d: %d commands, %s from nothing to a pod holding the lock", run, countCommands(blocks, quickstartBlocks[:3]...), time.Since(start).Round(100*time.Millisecond))
		holdsFencedLock(t)
		if run == 1 {
			redisRestartKeepsUsers(t, cs)
			goSnippetInPod(t, blocks["go"], holdsFencedLock(t))
		}
		start = time.Now()
		shell.run(t, "cleanup", blocks["cleanup"])
		t.Logf("MEASURE quick start run %d: cleanup in %d commands, %s", run, countCommands(blocks, "cleanup"), time.Since(start).Round(100*time.Millisecond))
		nothingLeft(t, before)
	}
}

// readmeBlocks reads README.md's quick-start blocks and its first Go block
// compiled as pkg/kube's quickStart (under "go").
func readmeBlocks(t *testing.T, repo string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "README.md")) //nolint:gosec // G304: the clone's README
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(string(b), "\n")
	marker := regexp.MustCompile(`^<!-- (quickstart: (\w+)|compiled: pkg/kube/example_test.go quickStart) -->$`)
	for i := 0; i+1 < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name := m[2]
		if name == "" {
			name = "go"
		}
		var code []string
		for j := i + 2; j < len(lines) && lines[j] != "```"; j++ {
			code = append(code, lines[j])
		}
		out[name] = strings.Join(code, "\n") + "\n"
	}
	for _, name := range append(quickstartBlocks, "go") {
		if strings.TrimSpace(out[name]) == "" {
			t.Fatalf("README.md has no quick-start block %q (<!-- quickstart: %s --> before a ```sh block)", name, name)
		}
	}
	return out
}

// TestQuickStartBlocks runs everywhere, without the node: README's quick
// start has its blocks, each is valid bash (bash -n), and it takes at most
// six commands from nothing to a pod holding the lock.
func TestQuickStartBlocks(t *testing.T) {
	repo, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, repo)
	for _, name := range quickstartBlocks {
		cmd := exec.CommandContext(t.Context(), "bash", "-n", "-c", blocks[name]) //nolint:gosec // G204: parsed, not run
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README's quick-start block %q is not valid bash: %v\n%s", name, err, out)
		}
	}
	if n := countCommands(blocks, quickstartBlocks[:3]...); n > 6 || n < 2 {
		t.Errorf("README's quick start takes %d commands to a pod holding the lock, want at most 6", n)
	}
}

// countCommands counts the shell commands of blocks: lines that are not
// blank, comments, continuations or inside a here-document.
func countCommands(blocks map[string]string, names ...string) int {
	n := 0
	for _, name := range names {
		heredoc, continued := "", false
		for line := range strings.SplitSeq(blocks[name], "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case heredoc != "":
				if trimmed == heredoc {
					heredoc = ""
				}
				continue
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
				continue
			}
			if !continued {
				n++
			}
			continued = strings.HasSuffix(trimmed, "\\")
			if m := regexp.MustCompile(`<<-?'?(\w+)'?`).FindStringSubmatch(trimmed); m != nil {
				heredoc = m[1]
			}
		}
	}
	return n
}

// quickstartShell runs README blocks as a reader's shell would, except
// that ghcr.io resolves to the scenarios' registry (a hosts file mounted
// in the shell's own mount namespace) and its certificate authority is
// trusted (SSL_CERT_FILE).
type quickstartShell struct{ hosts, ca string }

func (s quickstartShell) run(t *testing.T, name, script string) {
	t.Helper()
	start := time.Now()
	ctx, cancel := contextFor(t, 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "bash", "-c", //nolint:gosec // G204: README's blocks, the point of the test
		`mount --bind "$0" /etc/hosts && exec bash -euo pipefail -c "$1"`, s.hosts, script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+s.ca)
	out, err := cmd.CombinedOutput()
	t.Logf("README quick start %q (%s):\n%s", name, time.Since(start).Round(100*time.Millisecond), out)
	if err != nil {
		t.Fatalf("README's quick-start block %q failed: %v\n%s", name, err, script)
	}
}

// publishQuickstart serves the release on the scenarios' registry (its two
// images and its chart, as 9b does, and the Redis image its chart names,
// here the node's) and puts an HTTPS front for ghcr.io before it.
func publishQuickstart(t *testing.T) quickstartShell {
	t.Helper()
	reg, rel := env(t, "REGISTRY"), filepath.Join(root, "dist", "node", "release")
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(b))
	log := serveRegistry(t)
	registry := filepath.Join(root, "dist", "bin", "node", "registry")
	for _, c := range []string{"manager", "lockctl"} {
		command(t, registry, "push", "-archive", filepath.Join(rel, c+"-"+version+".tar"), "-to", reg+"/redlease/"+c+":"+version)
	}
	var values struct {
		Quickstart struct {
			Redis struct {
				Image struct{ Registry, Repository, Tag string }
			}
		}
	}
	b, err = os.ReadFile(filepath.Join(root, "charts", "redlease", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	img := values.Quickstart.Redis.Image
	redis := strings.TrimSpace(command(t, registry, "push", "-archive", filepath.Join(root, "dist", "node", "redis.tar"), "-to", reg+"/"+img.Repository+":"+img.Tag))
	// containerd resolves the tag through its mirror; the content is the
	// node's own Redis image, already imported, so nothing more is fetched.
	t.Cleanup(func() { log.pulled(t, 0, img.Repository, img.Tag, "ns="+img.Registry) })
	t.Logf("the Redis image %s/%s:%s is the node's, %s", img.Registry, img.Repository, img.Tag, redis)
	helm(t, "push", filepath.Join(rel, "redlease-"+strings.TrimPrefix(version, "v")+".tgz"), "oci://"+reg+"/redlease/charts", "--plain-http")

	host, _, err := net.SplitHostPort(reg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A throwaway CA, and a certificate for ghcr.io it signed.
	ca := certtest.NewCA(t, "redlease node test CA")
	cert := ca.ServerCert(t, "ghcr.io")
	s := quickstartShell{hosts: filepath.Join(dir, "hosts"), ca: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(s.ca, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.hosts, []byte("127.0.0.1 localhost\n"+host+" ghcr.io\n"), 0o644); err != nil { //nolint:gosec // G306: a hosts file, read by everyone
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(host, "443"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: reg})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// holdsFencedLock checks that the quick start's pod holds demo/hello: the
// lock is Ready, its observed holder is the pod, the pod's log names the
// fence it was given and the status shows the same. It returns the fence.
func holdsFencedLock(t *testing.T) uint64 {
	t.Helper()
	acquired := regexp.MustCompile(`acquired demo/hello: holder \S+, fence (\d+)`)
	var fence uint64
	locktest.Eventually(t, time.Minute, "the lock Ready and held by the pod hello, with the fence its log shows", func() error {
		st := jsonpath(t, `{.status.conditions[?(@.type=="Ready")].status} {.status.holder.pod} {.status.holder.fence}`, "-n", "demo", "dlock", "hello")
		f := strings.Fields(st)
		if len(f) != 3 || f[0] != "True" || f[1] != "hello" {
			return fmt.Errorf("Ready, holder pod and fence: %q", st)
		}
		logs, err := kubectlErr(t, "-n", "demo", "logs", "hello")
		if err != nil {
			return fmt.Errorf("the pod's log: %w: %s", err, logs)
		}
		m := acquired.FindAllStringSubmatch(logs, -1)
		if m == nil || m[len(m)-1][1] != f[2] {
			return fmt.Errorf("the status shows fence %s; the pod's log:\n%s", f[2], logs)
		}
		fence, err = strconv.ParseUint(f[2], 10, 64)
		return err
	})
	if fence == 0 {
		t.Fatal("fence 0")
	}
	return fence
}

// redisRestartKeepsUsers: the quick start's Redis killed (SIGKILL of its
// container; the pod stays, with its aclfile) comes back with the
// controller's user: the store is Ready again on the new process (a new
// run_id), the controller provisions the tenant's user again, and the
// lock is Ready with the pod holding it.
func redisRestartKeepsUsers(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	before := jsonpath(t, "{.status.endpoints[0].runID}", "clusterlockstore", "quickstart")
	if err := syscall.Kill(hostPID(t, cs, operatorNS, "redlease-quickstart-redis-0", "redis"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	locktest.Eventually(t, 2*time.Minute, "the store Ready on the restarted Redis", func() error {
		st := jsonpath(t, `{.status.conditions[?(@.type=="Ready")].status} {.status.endpoints[0].runID}`, "clusterlockstore", "quickstart")
		if f := strings.Fields(st); len(f) != 2 || f[0] != "True" || f[1] == before {
			return fmt.Errorf("Ready and run_id: %q (before the restart: %s)", st, before)
		}
		return nil
	})
	t.Logf("MEASURE the quick start's Redis SIGKILLed: the store Ready on the new process after %s", time.Since(start).Round(100*time.Millisecond))
}

// goSnippetInPod compiles README's Go snippet into a program (the
// snippet is the body of a function returning error; settle, "your work",
// prints the fence) and runs it in a pod of demo as the ServiceAccount
// README's Role is bound to, once the lock pod is gone: it must take the
// lock with a fence above the one before.
func goSnippetInPod(t *testing.T, snippet string, before uint64) {
	t.Helper()
	kubectl(t, "-n", "demo", "delete", "pod", "hello", "--timeout=1m")
	dir := filepath.Join(env(t, "NODE_DIR"), "quickstart-go")
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: read by the pod's user
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	buildSnippet(t, snippet, filepath.Join(dir, "quickstart"))
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: quickstart-go, namespace: demo}
spec:
  serviceAccountName: hello
  restartPolicy: Never
  containers:
  - name: go
    image: ghcr.io/redlease/lockctl:%s
    command: [/snippet/quickstart]
    volumeMounts: [{name: snippet, mountPath: /snippet, readOnly: true}]
  volumes: [{name: snippet, hostPath: {path: %s, type: Directory}}]
`, strings.TrimSpace(string(mustRead(t, filepath.Join(root, "VERSION")))), dir))
	locktest.Eventually(t, 2*time.Minute, "the Go snippet's pod Succeeded", func() error {
		if phase := jsonpath(t, "{.status.phase}", "-n", "demo", "pod", "quickstart-go"); phase != "Succeeded" {
			if phase == "Failed" {
				logs, _ := kubectlErr(t, "-n", "demo", "logs", "quickstart-go")
				t.Fatalf("the Go snippet's pod failed:\n%s", logs)
			}
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	logs := kubectl(t, "-n", "demo", "logs", "quickstart-go")
	m := regexp.MustCompile(`settled with fence (\d+)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("the Go snippet's pod did not settle:\n%s", logs)
	}
	if fence, _ := strconv.ParseUint(m[1], 10, 64); fence <= before {
		t.Errorf("the Go snippet got fence %d, not above the lock pod's %d", fence, before)
	}
	t.Logf("the Go snippet took demo/hello with fence %s (the lock pod had %d)", m[1], before)
}

// buildSnippet compiles snippet as the body of quickStart(ctx) error in
// a main package of this module (a go build -overlay: nothing is written
// into the clone), statically, to out.
func buildSnippet(t *testing.T, snippet, out string) {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"

	"github.com/redlease/redlease/pkg/kube"
)

func main() {
	if err := quickStart(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// settle is README's "your work": it shows the fence it would send.
func settle(ctx context.Context, fence uint64) error {
	fmt.Println("settled with fence", fence)
	return ctx.Err()
}

func quickStart(ctx context.Context) error {
` + snippet + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, "test", "node", "quickstartsnippet")
	overlay := fmt.Sprintf(`{"Replace":{%q:%q}}`, filepath.Join(pkg, "main.go"), filepath.Join(dir, "main.go"))
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextFor(t, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-trimpath", "-o", out, pkg) //nolint:gosec // G204: the go tool on the test's own program
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README's Go snippet does not compile as a program: %v\n%s\n%s", err, b, src)
	}
}

// releaseObjects lists what the release may leave: Helm releases,
// redlease objects, the quick start's namespaces, the chart's cluster-wide
// and namespaced objects (labelled part-of redlease), and the CRDs.
func releaseObjects(t *testing.T) []string {
	t.Helper()
	out := strings.Fields(command(t, filepath.Join(root, "bin", "helm"), "list", "-A", "-q"))
	crds := strings.Fields(kubectl(t, "get", "crd", "-o", "name"))
	out = append(out, crds...)
	// Before the quick start the kinds do not exist at all.
	if slices.Contains(crds, "customresourcedefinition.apiextensions.k8s.io/clusterlockstores.redlease.io") {
		out = append(out, strings.Fields(kubectl(t, "get", "clusterlockstores,lockstores,distributedlocks", "-A", "-o", "name"))...)
	}
	for _, args := range [][]string{
		{"get", "namespaces", "-o", "name", "--field-selector", "metadata.name!=default,metadata.name!=kube-system,metadata.name!=kube-public,metadata.name!=kube-node-lease"},
		{"get", "clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings", "-l", "app.kubernetes.io/part-of=redlease", "-o", "name"},
		{"get", "secrets,configmaps,serviceaccounts,services,pods,statefulsets,deployments,jobs,roles,rolebindings", "-A", "-l", "app.kubernetes.io/part-of=redlease", "-o", "name"},
	} {
		out = append(out, strings.Fields(kubectl(t, args...))...)
	}
	slices.Sort(out)
	return out
}

// nothingLeft: after README's cleanup the cluster holds what it held
// before the quick start, plus the four CRDs (kept on uninstall, as
// documented: crds.keep).
func nothingLeft(t *testing.T, before []string) {
	t.Helper()
	after := releaseObjects(t)
	var left []string
	for _, o := range after {
		if !slices.Contains(before, o) && !strings.HasPrefix(o, "customresourcedefinition.apiextensions.k8s.io/") {
			left = append(left, o)
		}
	}
	if len(left) > 0 {
		t.Errorf("README's cleanup left:\n%s", strings.Join(left, "\n"))
	}
	if crds := strings.Count(strings.Join(after, " "), ".redlease.io"); crds != 4 {
		t.Errorf("%d redlease CRDs after the uninstall, want the 4 kept (crds.keep)", crds)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // G304: the clone's files
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// contextFor bounds a command by d; not t.Context() alone, which ends
// before cleanups run.
func contextFor(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), d)
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package node_test holds make test-node's scenarios: the operator and
// lockctl images, the chart and Redis in pods on a real kubelet
// (hack/node/up.sh), driven with helm and kubectl as a user would. They need
// that cluster: hack/node/run.sh brings it up, sets REDLEASE_NODE=1 and runs
// them in file order (each scenario builds on the ones before); anywhere else
// they are skipped.
package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/internal/kubetest"
)

// The cluster's settings, from hack/node/env.sh through run.sh.
var (
	root     string
	clusterC struct {
		once sync.Once
		cs   *kubernetes.Clientset
		c    client.Client // typed, the redlease kinds too
		err  error
	}
)

// cluster skips t outside make test-node and returns a clientset of the
// node's cluster (KUBECONFIG: its admin).
func cluster(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	if os.Getenv("REDLEASE_NODE") != "1" {
		t.Skip("needs the single-node cluster of `make test-node` (hack/node/run.sh sets REDLEASE_NODE=1): run make test-node")
	}
	clusterC.once.Do(func() {
		if root, clusterC.err = kubetest.RepoRoot(); clusterC.err != nil {
			return
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
		if err != nil {
			clusterC.err = err
			return
		}
		if clusterC.cs, clusterC.err = kubernetes.NewForConfig(cfg); clusterC.err != nil {
			return
		}
		scheme, err := kubetest.NewScheme()
		if err != nil {
			clusterC.err = err
			return
		}
		clusterC.c, clusterC.err = client.New(cfg, client.Options{Scheme: scheme})
	})
	if clusterC.err != nil {
		t.Fatal(clusterC.err)
	}
	containment(t)
	start := time.Now()
	t.Cleanup(func() { t.Logf("TIME %s %.1fs", t.Name(), time.Since(start).Seconds()) })
	return clusterC.cs
}

// env is a setting run.sh exported from hack/node/env.sh.
func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the scenarios through make test-node", name)
	}
	return v
}

// containment fails t when a pod forwarded a packet off the bridge during
// it: the REJECT rule's counter (hack/node/up.sh) moved.
func containment(t *testing.T) {
	t.Helper()
	before := rejected(t)
	t.Cleanup(func() {
		if n := rejected(t); n != before {
			t.Errorf("%d packets forwarded off the node's bridge during %s (the REJECT rule refused them): a pod tried to leave the machine", n-before, t.Name())
		}
	})
}

func rejected(t *testing.T) int {
	t.Helper()
	out := command(t, "iptables", "-L", "FORWARD", "-v", "-n", "-x")
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "redlease-node-containment") {
			n, err := strconv.Atoi(strings.Fields(line)[0])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("the containment rule (redlease-node-containment) is missing from FORWARD")
	return 0
}

// command runs a program (kubectl, helm, iptables, ctr) with stdin and fails
// t on error; it returns the standard output.
func commandIn(t *testing.T, stdin, name string, args ...string) string {
	t.Helper()
	// Not t.Context(): cleanups run commands too, after it is canceled.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: bin/ tools and the node's own commands
	cmd.Dir = root
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	return commandIn(t, "", name, args...)
}

// kubectlErr is kubectl that returns its error instead of failing t, with
// its combined output.
func kubectlErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return kubectlIn(t.Context(), args...)
}

// kubectlIn is kubectlErr under ctx: a cleanup's, after t's context ended.
func kubectlIn(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), args...) //nolint:gosec // G204: the clone's kubectl
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return command(t, filepath.Join(root, "bin", "kubectl"), args...)
}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	return command(t, filepath.Join(root, "bin", "helm"), args...)
}

// apply is kubectl apply -f - of a manifest.
func apply(t *testing.T, manifest string) {
	t.Helper()
	commandIn(t, manifest, filepath.Join(root, "bin", "kubectl"), "apply", "-f", "-")
}

// jsonpath is kubectl get ... -o jsonpath=EXPR.
func jsonpath(t *testing.T, expr string, args ...string) string {
	t.Helper()
	return kubectl(t, append(append([]string{"get"}, args...), "-o", "jsonpath="+expr)...)
}

// ms formats a duration as milliseconds for the measurements' log lines.
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// p50max summarizes durations for a MEASURE line: "p50 X, max Y over N".
func p50max(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("p50 %s, max %s over %d", ms(s[(len(s)-1)/2]), ms(s[len(s)-1]), len(s))
}

// operatorMemory logs the memory of each manager pod, from its cgroup
// (v1): the working set (usage less inactive file pages) and the RSS.
func operatorMemory(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(operatorNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		dir := podCgroup(t, "memory", string(p.UID))
		stat := map[string]int64{}
		b, err := os.ReadFile(filepath.Join(dir, "memory.stat")) //nolint:gosec // G304: a pod's cgroup
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok {
				stat[k], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		b, err = os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes")) //nolint:gosec // G304: a pod's cgroup
		if err != nil {
			t.Fatal(err)
		}
		usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("MEASURE operator pod %s memory: working set %.1f MiB, RSS %.1f MiB", p.Name,
			float64(usage-stat["total_inactive_file"])/(1<<20), float64(stat["total_rss"])/(1<<20))
	}
}

// podCgroup is a pod's cgroup (v1) under a hierarchy (memory, freezer),
// whatever its QoS class.
func podCgroup(t *testing.T, hierarchy, uid string) string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"/sys/fs/cgroup/%s/kubepods/pod%s", "/sys/fs/cgroup/%s/kubepods/*/pod%s"} {
		m, err := filepath.Glob(fmt.Sprintf(pattern, hierarchy, uid))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, m...)
	}
	if len(dirs) != 1 {
		t.Fatalf("pod %s: %s cgroups %v, want one", uid, hierarchy, dirs)
	}
	return dirs[0]
}

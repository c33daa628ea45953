/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/lockctl"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/pkg/lock"
)

// agentRounds is how many writes each of scenario 8a's three pods makes.
const agentRounds = 8

// agentHold is how long each pod keeps each lease. A pod that gives the
// lock back re-joins its line within milliseconds; the other two pods' holds
// give it twice this (far more than that) before the rotation check would
// call a late re-join a queue jump. With no hold, a pod starved of CPU on
// the two-core node for two short critical sections (about 100 ms each)
// once missed its turn.
const agentHold = 400 * time.Millisecond

// agentLedgerDir is the host directory the three pods share as their fenced
// ledger (a hostPath: one node).
const agentLedgerDir = "/var/tmp/redlease-node-agent-ledger"

// agentLockManifest is a FIFO DistributedLock "ledger" on the namespace's
// Redis, and the ServiceAccount and Role `lockctl rbac` would print for it:
// the agents read the lock through it, nothing more.
func agentLockManifest(ns string) string {
	return strings.Replace(inlineLockManifest(ns, "ledger", "ledger", 5*time.Second), "  ttl: 5s\n", "  ttl: 5s\n  fairness: FIFO\n", 1)
}

// contenderJob is a Job whose one pod runs command in image under the
// ServiceAccount "ledger", the ledger directory mounted at /ledger.
func contenderJob(ns, name, image string, command []string, env map[string]string) string {
	quoted := make([]string, len(command))
	for i, c := range command {
		quoted[i] = strconv.Quote(c)
	}
	envs := ""
	for k, v := range env {
		envs += fmt.Sprintf("{name: %s, value: %q}, ", k, v)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  backoffLimit: 0
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      serviceAccountName: ledger
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: %[3]s
        imagePullPolicy: Never
        command: [%[4]s]
        env: [%[5]s]
        volumeMounts: [{name: ledger, mountPath: /ledger}, {name: tmp, mountPath: /tmp}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
      volumes: [{name: ledger, hostPath: {path: %[6]s, type: Directory}}, {name: tmp, emptyDir: {}}]
`, ns, name, image, strings.Join(quoted, ", "), strings.TrimSuffix(envs, ", "), agentLedgerDir)
}

// withAgent is job with `lockctl sidecar --container app`'s patch applied
// as a user applies it (kubectl patch --local): the agent as a native
// sidecar beside the app container.
func withAgent(t *testing.T, job string) string {
	t.Helper()
	var patch, errb bytes.Buffer
	if code := lockctl.Main(t.Context(), []string{"sidecar", "--container", "app", "--image", "ghcr.io/redlease/lockctl:v0.1.0"}, &patch, &errb); code != 0 {
		t.Fatalf("lockctl sidecar: %d %s", code, errb.String())
	}
	dir := t.TempDir()
	jobFile, patchFile := filepath.Join(dir, "job.yaml"), filepath.Join(dir, "patch.yaml")
	if err := os.WriteFile(jobFile, []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(patchFile, patch.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubectl(t, "patch", "--local", "-f", jobFile, "--type", "strategic", "--patch-file", patchFile, "-o", "yaml")
}

var fenceLine = regexp.MustCompile(`(?m)^fence (\d+)$`)

// TestScenario8aAgentClientsInThreeLanguages: a Go pod (the library), a
// Python pod and a Node pod (each through its own lock agent, added as a
// native sidecar by `lockctl sidecar`) take one FIFO DistributedLock in
// turn and write to one fenced ledger: every pod completes, the ledger
// counts every write (no two critical sections at once), its fences
// strictly increase, every fence a pod printed is in it, and once all
// three wait, no pod takes the lock twice in a row while the others wait
// (a pod that re-joins the line queues behind them: FIFO across
// languages).
func TestScenario8aAgentClientsInThreeLanguages(t *testing.T) {
	cluster(t)
	const ns = "agents"
	if err := os.RemoveAll(agentLedgerDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(agentLedgerDir, 0o777); err != nil { //nolint:gosec // G301: the pods write it as the images' non-root user
		t.Fatal(err)
	}
	_ = os.Chmod(agentLedgerDir, 0o777) //nolint:gosec // G302: as above, whatever the umask
	t.Cleanup(func() { _ = os.RemoveAll(agentLedgerDir) })
	kubectl(t, "create", "namespace", ns)
	apply(t, redisManifest(t, ns))
	kubectl(t, "rollout", "status", "-n", ns, "deployment/redis", "--timeout=2m")
	apply(t, agentLockManifest(ns))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/ledger", "--timeout=2m")

	// The test holds the lock until all three pods wait in its line, so that
	// they contend from their first round whatever their start times.
	gate := holdUntilWaiting(t, ns, "ledger", 3)
	rounds := strconv.Itoa(agentRounds)
	apply(t, contenderJob(ns, "go", env(t, "DEMO_IMAGE"), []string{"/demo", "file-ledger", "--namespace", ns, "--lock", "ledger", "--ledger", "/ledger/ledger", "--rounds", rounds, "--hold", agentHold.String()}, nil))
	apply(t, withAgent(t, contenderJob(ns, "python", env(t, "PYTHON_IMAGE"), []string{"/python3.11", "-S", "/app/ledger.py", "ledger", "/ledger/ledger", rounds},
		map[string]string{"PYTHONHOME": "/usr", "WORK_SECONDS": strconv.FormatFloat(agentHold.Seconds(), 'g', -1, 64)})))
	apply(t, withAgent(t, contenderJob(ns, "node", env(t, "NODEJS_IMAGE"), []string{"/node", "/app/ledger.js", "ledger", "/ledger/ledger", rounds},
		map[string]string{"HOLD_MS": strconv.FormatInt(agentHold.Milliseconds(), 10)})))
	gate()
	begin := time.Now()
	if _, err := kubectlErr(t, "wait", "-n", ns, "--for=condition=Complete", "job", "--all", "--timeout=4m"); err != nil {
		for _, j := range []string{"go", "python", "node"} {
			out, _ := kubectlErr(t, "logs", "-n", ns, "job/"+j, "--all-containers")
			t.Logf("job %s:\n%s", j, out)
		}
		t.Fatalf("the three Jobs did not complete: %v", err)
	}
	t.Logf("MEASURE 3 pods × %d writes under one lock (Go library, Python and Node through their agents), each lease held %s: %s", agentRounds, agentHold, ms(time.Since(begin)))
	checkAgentLedger(t, ns)
}

// checkAgentLedger reads the ledger and the pods' printed fences.
func checkAgentLedger(t *testing.T, ns string) {
	t.Helper()
	writer := map[uint64]string{}
	for _, j := range []string{"go", "python", "node"} {
		logs := kubectl(t, "logs", "-n", ns, "job/"+j, "-c", "app")
		for _, m := range fenceLine.FindAllStringSubmatch(logs, -1) {
			f, _ := strconv.ParseUint(m[1], 10, 64)
			writer[f] = j
		}
	}
	b, err := os.ReadFile(filepath.Join(agentLedgerDir, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3*agentRounds || len(writer) != 3*agentRounds {
		t.Fatalf("the ledger has %d writes and the pods printed %d fences; want %d each", len(lines), len(writer), 3*agentRounds)
	}
	var order []string
	var last uint64
	for i, line := range lines {
		var fence uint64
		var count int
		if _, err := fmt.Sscanf(line, "%d %d", &fence, &count); err != nil || count != i+1 || fence <= last || writer[fence] == "" {
			t.Fatalf("ledger line %d %q: want count %d, a fence above %d that a pod printed", i+1, line, i+1, last)
		}
		last = fence
		order = append(order, writer[fence])
	}
	checkRotation(t, order)
}

// checkRotation: from the first write after all three had written once
// (all three then wait in line) to the first pod's last write (after it,
// fewer wait), no writer writes twice in a row.
func checkRotation(t *testing.T, order []string) {
	t.Helper()
	written := map[string]int{}
	start, end := len(order), len(order)
	for i, w := range order {
		written[w]++
		if len(written) == 3 && start == len(order) {
			start = i
		}
		if written[w] == agentRounds {
			end = i
			break
		}
	}
	if end-start < 6 {
		t.Fatalf("the three contended for writes %d to %d only: %v", start+1, end+1, order)
	}
	for i := start + 1; i <= end; i++ {
		if order[i] == order[i-1] {
			t.Fatalf("writes %d and %d both by %s although the others waited (FIFO): %v", i, i+1, order[i], order)
		}
	}
	t.Logf("MEASURE no pod wrote twice in a row from write %d to %d: %v", start+1, end+1, order)
}

// holdUntilWaiting takes DistributedLock ns/name's key on the namespace's
// Redis (the pod's address, from the host) with the library, as the lock's
// FIFO holder, and returns the function that waits until n clients wait in
// its line and then releases it.
func holdUntilWaiting(t *testing.T, ns, name string, n int) func() {
	t.Helper()
	ip := jsonpath(t, "{.items[0].status.podIP}", "pods", "-n", ns, "-l", "app=redis")
	key := jsonpath(t, "{.status.key}", "distributedlock", "-n", ns, name)
	rc := redis.NewClient(&redis.Options{Addr: ip + ":6379"})
	t.Cleanup(func() { _ = rc.Close() })
	l, err := lock.New(rc, lock.WithTTL(5*time.Second), lock.WithFIFO(), lock.WithIdentity("scenario-8a-gate"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	lease, err := l.TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		locktest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d clients waiting for %s", n, key), func() error {
			h, err := l.Inspect(t.Context(), key)
			switch {
			case err != nil:
				return err
			case h.Waiting == nil || h.Waiting.Count < n:
				return fmt.Errorf("waiting: %+v", h.Waiting)
			}
			return nil
		})
		if err := lease.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/pkg/fence"
)

const (
	// frozenTTL is the lease of scenario 4's workers, frozenWork the time
	// each takes between its read of the ledger and its write.
	frozenTTL  = 3 * time.Second
	frozenWork = time.Second
	// frozenRounds is how many increments each of the three workers makes.
	frozenRounds = 4
)

// frozenManifest is an inline lock on the namespace's Redis, a
// ServiceAccount under the documented pod Role, and a Job of three pods
// running the demo's library worker (pkg/kube, in-cluster config): each
// takes the lock frozenRounds times and increments the fenced ledger under
// it (read, frozenWork, write with the lease's fence).
func frozenManifest(t *testing.T, ns string) string {
	return inlineLockManifest(ns, "ledger", "worker", frozenTTL) + fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: workers, namespace: %[1]s}
spec:
  parallelism: 3
  completions: 3
  backoffLimit: 0
  template:
    metadata: {labels: {app: worker}}
    spec:
      serviceAccountName: worker
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: worker
        image: %[2]s
        imagePullPolicy: Never
        command: ["/demo", "worker", "--name", "$(POD_NAME)", "--namespace", "%[1]s", "--lock", "ledger",
                  "--store", "$(REDIS_SERVICE_HOST):$(REDIS_SERVICE_PORT)", "--rounds", "%[3]d", "--work", "%[4]s"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: tmp, mountPath: /tmp}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
      volumes: [{name: tmp, emptyDir: {}}]
`, ns, env(t, "DEMO_IMAGE"), frozenRounds, frozenWork)
}

// workerEvent is a line of the demo worker's output.
type workerEvent struct {
	Worker   string `json:"worker"`
	Kind     string `json:"kind"`
	Fence    uint64 `json:"fence"`
	Accepted bool   `json:"accepted"`
}

// podLogEvents are the worker events in the CRI log files the kubelet
// writes for a container (podLogsDir: <ns>_<pod>_<uid>/<container>/N.log),
// read from the host without the API server's delay.
func podLogEvents(t *testing.T, ns, pod, uid, container string) []workerEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env(t, "NODE_DIR"), "pod-logs", ns+"_"+pod+"_"+uid, container, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var events []workerEvent
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // G304: the kubelet's log files of this node
		if err != nil {
			continue // rotated away, or not yet there
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			// <time> stdout F <message>
			if f := strings.SplitN(line, " ", 4); len(f) == 4 {
				var e workerEvent
				if json.Unmarshal([]byte(f[3]), &e) == nil && e.Kind != "" {
					events = append(events, e)
				}
			}
		}
	}
	return events
}

// setFreezer writes a state (FROZEN, THAWED) to a cgroup v1 freezer and
// waits until the cgroup is in it.
func setFreezer(t *testing.T, dir, state string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	locktest.Eventually(t, 10*time.Second, "freezer "+dir+" "+state, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "freezer.state")) //nolint:gosec // G304: a pod's cgroup
		if err != nil || strings.TrimSpace(string(b)) != state {
			return fmt.Errorf("%q, %w", b, err)
		}
		return nil
	})
}

// TestScenario4FrozenPod: three pods increment a fenced ledger under a lock
// (TTL 3 s). The holder's pod is frozen through the cgroup v1 freezer
// between its read and its write (the GC pause of a real node) for longer
// than the TTL: another pod takes the lock and writes with a greater fence;
// when the frozen pod thaws, its late write is refused by the fence, and
// the ledger counts every accepted write (no lost update).
func TestScenario4FrozenPod(t *testing.T) {
	cs := cluster(t)
	const ns = "frozen"
	kubectl(t, "create", "namespace", ns)
	apply(t, redisManifest(t, ns))
	kubectl(t, "rollout", "status", "-n", ns, "deployment/redis", "--timeout=2m")
	apply(t, frozenManifest(t, ns))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/ledger", "--timeout=2m")
	rc := redisFromHost(t, ns)
	store := fence.NewRedisStore(rc, "")

	pod, uid, held := holderBeforeItsWrite(t, cs, ns)
	freezer := podCgroup(t, "freezer", uid)
	setFreezer(t, freezer, "FROZEN")
	frozenAt := time.Now()
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0o600) })
	t.Logf("froze %s holding fence %d, between its read and its write", pod, held)

	// Another pod takes over once the lease has run out, and writes.
	var took time.Duration
	locktest.Eventually(t, 3*frozenTTL, "another pod writes with a greater fence while "+pod+" is frozen", func() error {
		token, _, err := store.Read(t.Context(), ns+"/ledger")
		if err != nil || token <= held {
			return fmt.Errorf("the ledger's fence %d, %w", token, err)
		}
		took = time.Since(frozenAt)
		return nil
	})
	// Frozen longer than the TTL, and past the new holder's write.
	time.Sleep(max(frozenTTL+time.Second-time.Since(frozenAt), 0))
	setFreezer(t, freezer, "THAWED")
	t.Logf("MEASURE frozen holder: another pod's write accepted %s after the freeze (TTL %s); thawed after %s", ms(took), frozenTTL, ms(time.Since(frozenAt)))

	locktest.Eventually(t, 30*time.Second, pod+"'s late write, after the thaw", func() error {
		for _, e := range podLogEvents(t, ns, pod, uid, "worker") {
			if e.Kind == "write" && e.Fence == held {
				if e.Accepted {
					t.Fatalf("%s's write with fence %d, prepared before it was frozen past its TTL, was accepted", pod, held)
				}
				return nil
			}
		}
		return fmt.Errorf("no write with fence %d yet", held)
	})
	kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "job/workers", "--timeout=2m")

	// Every accepted write incremented what it read under the lock: the
	// ledger counts them all, or an update was lost.
	accepted, refused := countWrites(t, cs, ns, pod, held)
	_, v, err := store.Read(t.Context(), ns+"/ledger")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger %s after %d accepted and %d refused writes of %d rounds", v, accepted, refused, 3*frozenRounds)
	if n, err := strconv.Atoi(v); err != nil || n != accepted || accepted+refused != 3*frozenRounds || refused != 1 {
		t.Errorf("the ledger counts %q; %d writes accepted, %d refused, want %d in all with one refused: an update was lost", v, accepted, refused, 3*frozenRounds)
	}
}

// holderBeforeItsWrite waits until the three workers run and one of them is
// between its read of the ledger and its write (the latest event in its
// log is about-to-write), and returns that pod, its UID and its fence.
func holderBeforeItsWrite(t *testing.T, cs *kubernetes.Clientset, ns string) (pod, uid string, held uint64) {
	t.Helper()
	locktest.Eventually(t, 2*time.Minute, "a holder between its read and its write, three workers running", func() error {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=worker"})
		if err != nil {
			return err
		}
		if n := runningPods(t, cs, ns, "app=worker", "worker"); len(n) != 3 {
			return fmt.Errorf("%d workers run", len(n))
		}
		for _, p := range pods.Items {
			ev := podLogEvents(t, ns, p.Name, string(p.UID), "worker")
			if len(ev) > 0 && ev[len(ev)-1].Kind == "about-to-write" {
				pod, uid, held = p.Name, string(p.UID), ev[len(ev)-1].Fence
				return nil
			}
		}
		return fmt.Errorf("no worker between its read and its write")
	})
	return pod, uid, held
}

// countWrites counts the workers' accepted and refused writes, and fails t
// for a refused write other than the frozen pod's with fence held.
func countWrites(t *testing.T, cs *kubernetes.Clientset, ns, frozen string, held uint64) (accepted, refused int) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=worker"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, e := range podLogEvents(t, ns, p.Name, string(p.UID), "worker") {
			switch {
			case e.Kind == "write" && e.Accepted:
				accepted++
			case e.Kind == "write":
				refused++
				if p.Name != frozen || e.Fence != held {
					t.Errorf("%s's write with fence %d refused: only the frozen %s's (fence %d) was stale", p.Name, e.Fence, frozen, held)
				}
			}
		}
	}
	return accepted, refused
}

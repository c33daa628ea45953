/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
)

// electionTTL is the lease of scenario 5's candidates: a killed leader's
// key expires at most this long after its last renewal.
const electionTTL = 5 * time.Second

// electionManifest is an inline lock on the namespace's Redis, a
// ServiceAccount under the documented pod Role, and three candidates
// running `demo leader` (pkg/kube with rest.InClusterConfig: the pod's own
// service account) as that ServiceAccount.
func electionManifest(t *testing.T, ns string) string {
	return inlineLockManifest(ns, "leader", "candidate", electionTTL) + fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: candidates, namespace: %[1]s}
spec:
  replicas: 3
  selector: {matchLabels: {app: candidate}}
  template:
    metadata: {labels: {app: candidate}}
    spec:
      serviceAccountName: candidate
      terminationGracePeriodSeconds: 10
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: leader
        image: %[2]s
        imagePullPolicy: Never
        command: ["/demo", "leader", "--namespace", "%[1]s", "--lock", "leader"]
        # The demo binary also carries envtest, which makes /tmp at start.
        volumeMounts: [{name: tmp, mountPath: /tmp}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
      volumes: [{name: tmp, emptyDir: {}}]
`, ns, env(t, "DEMO_IMAGE"))
}

// holderOf is the value of a lock's key, read from the host at the Redis
// pod's address ("" when free), and the pod its identity names.
func holderOf(t *testing.T, rc *redis.Client, key string) (value, pod string, err error) {
	value, err = rc.Get(t.Context(), key).Result()
	if errors.Is(err, redis.Nil) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	id := protocol.IdentityFromValue(value)
	pod, _, _ = strings.Cut(id, ":")
	return value, pod, nil
}

// redisFromHost is a client of the namespace's Redis pod, on the bridge.
func redisFromHost(t *testing.T, ns string) *redis.Client {
	t.Helper()
	ip := jsonpath(t, "{.items[0].status.podIP}", "pods", "-n", ns, "-l", "app=redis")
	rc := redis.NewClient(&redis.Options{Addr: ip + ":6379"})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// TestScenario5Election: three pods elect a leader with pkg/kube from a Go
// program, through their in-cluster config and their own service account
// (bound to the documented pod Role only). Deleting the leader's pod (it
// releases on SIGTERM), and SIGKILL of its container from the host (its
// lease runs out), elect another candidate within the TTL; the leaders'
// fences grow with every election.
func TestScenario5Election(t *testing.T) {
	cs := cluster(t)
	const ns = "elect"
	kubectl(t, "create", "namespace", ns)
	apply(t, redisManifest(t, ns))
	apply(t, electionManifest(t, ns))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/leader", "--timeout=2m")
	kubectl(t, "rollout", "status", "-n", ns, "deployment/redis", "deployment/candidates", "--timeout=2m")
	key := jsonpath(t, "{.status.key}", "distributedlock", "-n", ns, "leader")
	rc := redisFromHost(t, ns)

	takeovers := map[string][]time.Duration{}
	var fence uint64
	for _, how := range []string{"delete", "sigkill", "delete", "sigkill", "delete"} {
		var value, leader string
		locktest.Eventually(t, time.Minute, "a leader among three running candidates", func() error {
			var err error
			if value, leader, err = holderOf(t, rc, key); err != nil || value == "" {
				return fmt.Errorf("key %s: %q, %w", key, value, err)
			}
			if n := runningPods(t, cs, ns, "app=candidate", "leader"); len(n) != 3 {
				return fmt.Errorf("%d candidates run: %v", len(n), n)
			}
			return nil
		})
		begin := time.Now()
		switch how {
		case "delete":
			kubectl(t, "delete", "pod", "-n", ns, leader, "--wait=false")
		case "sigkill":
			if err := syscall.Kill(hostPID(t, cs, ns, leader, "leader"), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		var next string
		// Polled every 20 ms: a takeover after a release takes a few round trips.
		deadline := begin.Add(2 * electionTTL)
		for {
			v, pod, err := holderOf(t, rc, key)
			if err == nil && v != "" && v != value {
				next = pod
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s of leader %s: no other leader after %s (key %q, %v)", how, leader, 2*electionTTL, v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(begin)
		takeovers[how] = append(takeovers[how], took)
		t.Logf("%s of leader %s: %s leads after %s (TTL %s)", how, leader, next, ms(took), electionTTL)
		if took > electionTTL+time.Second {
			t.Errorf("%s of leader %s: another led only after %s, more than the TTL %s (+1 s)", how, leader, took, electionTTL)
		}
		f := leadingFence(t, ns, next)
		if f <= fence {
			t.Errorf("leader %s leads with fence %d, not above its predecessor's %d", next, f, fence)
		}
		fence = f
	}
	for how, d := range takeovers {
		t.Logf("MEASURE election takeover after %s: %s (TTL %s)", how, p50max(d), electionTTL)
	}
}

// leadingFence is the fence of the last "leading" event in a candidate's
// log, once it has printed one.
func leadingFence(t *testing.T, ns, pod string) uint64 {
	t.Helper()
	var fence uint64
	locktest.Eventually(t, 10*time.Second, pod+" says it leads", func() error {
		lines := strings.Split(strings.TrimSpace(kubectl(t, "logs", "-n", ns, pod, "-c", "leader")), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			var e struct {
				Kind  string `json:"kind"`
				Fence uint64 `json:"fence"`
			}
			if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Kind == "leading" {
				fence = e.Fence
				return nil
			}
		}
		return fmt.Errorf("no leading event in its log:\n%s", strings.Join(lines, "\n"))
	})
	return fence
}

// runningPods are the pods matching selector whose container runs, by
// name, with its restart count.
func runningPods(t *testing.T, cs *kubernetes.Clientset, ns, selector, container string) map[string]int32 {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == container && c.State.Running != nil && p.DeletionTimestamp == nil {
				out[p.Name] = c.RestartCount
			}
		}
	}
	return out
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/locktest"
)

// standbyTTL and standbyProbePeriod bound a takeover: the lease of a
// killed leader runs out after the TTL, the new leader's pod is Ready one
// probe period after it took the lock.
const (
	standbyTTL         = 5 * time.Second
	standbyProbePeriod = time.Second
	// takeoverSlack is what the EndpointSlice's update and a loaded node
	// add to that.
	takeoverSlack = 3 * time.Second
)

// inlineLockManifest is an inline DistributedLock on the namespace's Redis
// (redisManifest) and a ServiceAccount sa bound to the documented pod Role:
// read the lock, get its credentials Secret (redlease-lock-<lock>).
func inlineLockManifest(ns, lock, sa string, ttl time.Duration) string {
	return fmt.Sprintf(`apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  redis: {mode: Standalone, service: {name: redis, port: 6379}}
  ttl: %[4]s
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: %[3]s, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: %[3]s-lock, namespace: %[1]s}
rules:
- apiGroups: ["redlease.io"]
  resources: ["distributedlocks"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: ["redlease-lock-%[2]s"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[3]s-lock, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %[3]s-lock}
subjects: [{kind: ServiceAccount, name: %[3]s, namespace: %[1]s}]
---
`, ns, lock, sa, ttl)
}

// lockctlInit is the pod spec part of config/samples/standby and
// config/samples/cronjob that puts lockctl into the pod: a restricted pod
// security context, and an init container from the lockctl image that
// installs it into the "tools" volume (an emptyDir, as are the volumes
// named in emptyDirs); each line indented by pad.
func lockctlInit(pad string, emptyDirs ...string) string {
	volumes := "{name: tools, emptyDir: {}}"
	for _, v := range emptyDirs {
		volumes += ", {name: " + v + ", emptyDir: {}}"
	}
	return pad + strings.ReplaceAll(strings.TrimSuffix(`securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
volumes: [`+volumes+`]
initContainers:
- name: lockctl
  image: ghcr.io/redlease/lockctl:v0.1.0
  imagePullPolicy: Never
  command: ["/lockctl", "install", "/tools/lockctl"]
  volumeMounts: [{name: tools, mountPath: /tools}]
  securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
`, "\n"), "\n", "\n"+pad) + "\n"
}

// redisManifest is a standalone Redis in namespace ns from the image
// assembled from Debian's redis-server (hack/node/images.sh), behind the
// Service "redis".
func redisManifest(t *testing.T, ns string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: redis, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: redis
        image: %[2]s
        imagePullPolicy: Never
        args: ["--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", "/data"]
        ports: [{name: redis, containerPort: 6379}]
        readinessProbe: {tcpSocket: {port: redis}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: redis, namespace: %[1]s}
spec:
  selector: {app: redis}
  ports: [{name: redis, port: 6379, targetPort: redis}]
`, ns, env(t, "REDIS_IMAGE"))
}

// standbyManifest is config/samples/standby/lockctl-standby.yaml on the
// node: an inline lock on the namespace's Redis (its pods may read the
// lock and its credentials Secret, redlease-lock-<lock>), three replicas of
// `lockctl run --ready-addr :8090 -- /pause` (the sandbox image's binary
// stands in for the server), a readiness probe on /readyz, a Service.
func standbyManifest(t *testing.T, ns string) string {
	return inlineLockManifest(ns, "leader", "app", standbyTTL) + fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: active, namespace: %[1]s}
spec:
  selector: {app: active}
  ports: [{name: lockctl, port: 8090, targetPort: lockctl}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: active, namespace: %[1]s}
spec:
  replicas: 3
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 100%%, maxSurge: 0}}
  progressDeadlineSeconds: 2147483647
  selector: {matchLabels: {app: active}}
  template:
    metadata: {labels: {app: active}}
    spec:
      serviceAccountName: app
      terminationGracePeriodSeconds: 10
%[4]s      containers:
      - name: app
        image: %[2]s
        imagePullPolicy: Never
        command: ["/tools/lockctl", "run", "--lock", "%[1]s/leader", "--ready-addr", ":8090", "--", "/pause"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        ports: [{name: lockctl, containerPort: 8090}]
        readinessProbe: {httpGet: {path: /readyz, port: lockctl}, periodSeconds: %[3]d, timeoutSeconds: 1, failureThreshold: 1}
        livenessProbe: {httpGet: {path: /livez, port: lockctl}, periodSeconds: 10, failureThreshold: 3}
        volumeMounts: [{name: tools, mountPath: /tools}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
`, ns, env(t, "PAUSE_IMAGE"), int(standbyProbePeriod/time.Second), lockctlInit("      "))
}

// sample is one look at a Service's EndpointSlices: the pods of its ready
// endpoints.
type sample struct {
	at    time.Time
	ready []string
}

// readyEndpoints are the pods of a Service's ready endpoints.
func readyEndpoints(t *testing.T, cs *kubernetes.Clientset, ns, svc string) ([]string, error) {
	eps, err := cs.DiscoveryV1().EndpointSlices(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
	if err != nil {
		return nil, err
	}
	var ready []string
	for _, sl := range eps.Items {
		for _, ep := range sl.Endpoints {
			// nil means ready (discovery/v1).
			if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) && ep.TargetRef != nil {
				ready = append(ready, ep.TargetRef.Name)
			}
		}
	}
	return ready, nil
}

// endpointSampler samples a Service's ready endpoints every 100 ms.
type endpointSampler struct {
	mu      sync.Mutex
	samples []sample
	stop    chan struct{}
	done    chan struct{}
}

func sampleEndpoints(t *testing.T, cs *kubernetes.Clientset, ns, svc string) *endpointSampler {
	s := &endpointSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ready, err := readyEndpoints(t, cs, ns, svc)
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.samples = append(s.samples, sample{time.Now(), ready})
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *endpointSampler) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// since are the samples taken after t.
func (s *endpointSampler) since(t time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.samples, t, func(sm sample, t time.Time) int {
		if sm.at.After(t) {
			return 1
		}
		return -1
	})
	return slices.Clone(s.samples[i:])
}

// last is the latest sample.
func (s *endpointSampler) last() sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return sample{}
	}
	return s.samples[len(s.samples)-1]
}

// check fails t for any sample with more than one ready endpoint, and for
// any sample outside the takeover windows without exactly one.
func (s *endpointSampler) check(t *testing.T, from time.Time, windows [][2]time.Time) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sm := range s.samples {
		if sm.at.Before(from) {
			continue
		}
		n++
		if len(sm.ready) > 1 {
			t.Errorf("%s: %d ready endpoints %v", sm.at.Format("15:04:05.000"), len(sm.ready), sm.ready)
			continue
		}
		inWindow := slices.ContainsFunc(windows, func(w [2]time.Time) bool { return !sm.at.Before(w[0]) && !sm.at.After(w[1]) })
		if !inWindow && len(sm.ready) != 1 {
			t.Errorf("%s: %d ready endpoints outside a takeover", sm.at.Format("15:04:05.000"), len(sm.ready))
		}
	}
	t.Logf("%d samples of the Service's endpoints: never more than one ready", n)
}

// hostPID is the host's PID of a container's first process, from
// containerd's task list.
func hostPID(t *testing.T, cs *kubernetes.Clientset, ns, pod, container string) int {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container {
			id = strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	if id == "" {
		t.Fatalf("pod %s/%s has no container %s running", ns, pod, container)
	}
	out := command(t, "ctr", "--address", env(t, "NODE_DIR")+"/containerd/containerd.sock", "-n", "k8s.io", "tasks", "ls")
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("container %s of %s/%s not in containerd's tasks:\n%s", id, ns, pod, out)
	return 0
}

// steadyLeader waits until the three replicas' containers run and exactly
// one endpoint has been ready for a second, and returns its pod.
func steadyLeader(t *testing.T, cs *kubernetes.Clientset, s *endpointSampler, ns string) string {
	t.Helper()
	var leader string
	var since time.Time
	locktest.Eventually(t, 2*time.Minute, "three standbys running, exactly one ready endpoint", func() error {
		if n := runningApps(t, cs, ns); len(n) != 3 {
			return fmt.Errorf("%d pods run lockctl: %v", len(n), n)
		}
		sm := s.last()
		if len(sm.ready) != 1 {
			leader = ""
			return fmt.Errorf("ready endpoints %v", sm.ready)
		}
		if sm.ready[0] != leader {
			leader, since = sm.ready[0], sm.at
		}
		if time.Since(since) < time.Second {
			return fmt.Errorf("%s ready for %s only", leader, time.Since(since))
		}
		return nil
	})
	return leader
}

// dumpOnFailure logs, when t has failed, what tells a lost lease from a
// slow probe: each selected pod's container state and restarts, its
// container's log (and its previous run's), and the namespace's events.
func dumpOnFailure(t *testing.T, cs *kubernetes.Clientset, ns, selector, container string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background() // t's context has ended
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Logf("listing pods for the failure's record: %v", err)
			return
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.Name == container {
					t.Logf("pod %s: ready %v, restarts %d, state %+v, last state %+v", p.Name, c.Ready, c.RestartCount, c.State, c.LastTerminationState)
				}
			}
			for _, previous := range []bool{false, true} {
				out, err := kubectlIn(ctx, "logs", "-n", ns, p.Name, "-c", container, "--timestamps", fmt.Sprintf("--previous=%v", previous))
				t.Logf("logs of %s (previous run: %v, err %v):\n%s", p.Name, previous, err, out)
			}
		}
		out, _ := kubectlIn(ctx, "get", "events", "-n", ns, "--sort-by=.lastTimestamp")
		t.Logf("events in %s:\n%s", ns, out)
	})
}

// runningApps are the standby pods whose app container runs, with its
// restart count.
func runningApps(t *testing.T, cs *kubernetes.Clientset, ns string) map[string]int32 {
	t.Helper()
	return runningPods(t, cs, ns, "app=active", "app")
}

// TestScenario3ActiveStandby: three replicas of lockctl run --ready-addr
// behind a Service: exactly one endpoint is ready at every sample, and the
// endpoint moves to another pod within the TTL plus the probe period after
// the leader's pod is deleted (it releases on SIGTERM) and after its
// container is SIGKILLed from the host (its lease runs out).
func TestScenario3ActiveStandby(t *testing.T) {
	cs := cluster(t)
	const ns = "standby"
	kubectl(t, "create", "namespace", ns)
	apply(t, redisManifest(t, ns))
	apply(t, standbyManifest(t, ns))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/leader", "--timeout=2m")
	s := sampleEndpoints(t, cs, ns, "active")
	dumpOnFailure(t, cs, ns, "app=active", "app")
	steadyLeader(t, cs, s, ns)
	start := time.Now() // exactly one ready from here on, but in takeovers

	bound := standbyTTL + standbyProbePeriod + takeoverSlack
	var windows [][2]time.Time
	takeovers := map[string][]time.Duration{}
	for _, how := range []string{"delete", "sigkill", "delete", "sigkill", "delete", "sigkill"} {
		leader := steadyLeader(t, cs, s, ns)
		begin := time.Now()
		switch how {
		case "delete":
			kubectl(t, "delete", "pod", "-n", ns, leader, "--wait=false")
		case "sigkill":
			if err := syscall.Kill(hostPID(t, cs, ns, leader, "app"), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		var took time.Duration
		// A new holder: another pod, or (after SIGKILL) the leader's own
		// container restarted, a standby like the others, once its
		// endpoint has left: the kubelet restarts a killed container
		// within a second, while the EndpointSlice may still list the pod
		// as ready from its old container (twice in CI, a "takeover" in
		// 650 ms, before the lease could have run out, closed the window
		// early and left the real one to count as an outage).
		locktest.Eventually(t, 2*bound, "a new holder's endpoint ready after "+how+" of "+leader, func() error {
			samples := s.since(begin)
			if len(samples) == 0 {
				return errors.New("no sample yet")
			}
			sm := samples[len(samples)-1]
			left := slices.ContainsFunc(samples, func(x sample) bool { return !slices.Contains(x.ready, leader) })
			if len(sm.ready) == 1 && (sm.ready[0] != leader || left) {
				took = sm.at.Sub(begin)
				return nil
			}
			return fmt.Errorf("ready endpoints %v", sm.ready)
		})
		windows = append(windows, [2]time.Time{begin, begin.Add(took)})
		takeovers[how] = append(takeovers[how], took)
		t.Logf("%s of leader %s: %s ready after %s (TTL %s, probe period %s)", how, leader, s.last().ready, ms(took), standbyTTL, standbyProbePeriod)
		if took > bound {
			t.Errorf("takeover after %s took %s, more than the TTL plus the probe period plus %s", how, took, takeoverSlack)
		}
	}
	steadyLeader(t, cs, s, ns)
	s.close()
	s.check(t, start, windows)
	for how, d := range takeovers {
		t.Logf("MEASURE takeover after %s: %s (TTL %s, probe period %s)", how, p50max(d), standbyTTL, standbyProbePeriod)
	}
	operatorMemory(t, cs)
}

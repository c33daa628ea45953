/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/pkg/fence"
)

const (
	// failoverWorkers take the lock failoverRounds times each.
	failoverWorkers = 2
	failoverRounds  = 25
)

// failoverJob is a Job of failoverWorkers pods in namespace ns running the
// demo's library worker on the lock "job" (scenario 2's, on the Sentinel
// store, waitForReplicas 1) as the ServiceAccount "tenant": each takes the
// lock failoverRounds times and increments the fenced ledger on the
// namespace's own Redis (the Service "redis") under it.
func failoverJob(t *testing.T, ns string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: failover, namespace: %[1]s}
spec:
  parallelism: %[3]d
  completions: %[3]d
  backoffLimit: 0
  template:
    metadata: {labels: {app: failover-worker}}
    spec:
      serviceAccountName: tenant
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: worker
        image: %[2]s
        imagePullPolicy: Never
        command: ["/demo", "worker", "--name", "$(POD_NAME)", "--namespace", "%[1]s", "--lock", "job",
                  "--store", "$(REDIS_SERVICE_HOST):$(REDIS_SERVICE_PORT)", "--rounds", "%[4]d", "--work", "200ms"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: tmp, mountPath: /tmp}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
      volumes: [{name: tmp, emptyDir: {}}]
`, ns, env(t, "DEMO_IMAGE"), failoverWorkers, failoverRounds)
}

// workerWrites counts the accepted and refused writes in the logs of the
// pods matching selector.
func workerWrites(t *testing.T, cs *kubernetes.Clientset, ns, selector string) (accepted, refused int) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, e := range podLogEvents(t, ns, p.Name, string(p.UID), "worker") {
			if e.Kind == "write" && e.Accepted {
				accepted++
			} else if e.Kind == "write" {
				refused++
			}
		}
	}
	return accepted, refused
}

// masterPod is the pod of the Redis StatefulSet whose address is addr
// (ip:port).
func masterPod(t *testing.T, addr string) string {
	t.Helper()
	for _, pod := range []string{"redis-0", "redis-1", "redis-2"} {
		if jsonpath(t, "{.status.podIP}", "pod", "-n", haNS, pod)+":6379" == addr {
			return pod
		}
	}
	t.Fatalf("no pod of the Redis StatefulSet at %s", addr)
	return ""
}

// TestScenario8RedisFailover: workers of a tenant hold scenario 2's lock in
// turn (waitForReplicas 1) and increment a fenced ledger under it while the
// Sentinel master's container is SIGKILLed from the host, then its pod
// deleted. The Sentinels fail over; the store's and the lock's status name
// the new master and are Ready again; every worker finishes its rounds;
// the ledger counts every accepted write (never two holders at once).
func TestScenario8RedisFailover(t *testing.T) {
	cs := cluster(t)
	ns := haTenants[0]
	if l, err := lookAt(t, ns, "job"); err != nil || l.ready != metav1.ConditionTrue {
		t.Fatalf("needs scenario 2 before it (the lock %s/job on the Sentinel store, Ready): %+v, %v", ns, l, err)
	}
	apply(t, redisManifest(t, ns))
	kubectl(t, "rollout", "status", "-n", ns, "deployment/redis", "--timeout=2m")
	apply(t, failoverJob(t, ns))
	locktest.Eventually(t, 2*time.Minute, "the workers write under the lock", func() error {
		if a, _ := workerWrites(t, cs, ns, "app=failover-worker"); a < 3 {
			return fmt.Errorf("%d writes accepted", a)
		}
		return nil
	})

	old := jsonpath(t, "{.status.master}", "clusterlockstore", haStore)
	pod := masterPod(t, old)
	begin := time.Now()
	if err := syscall.Kill(hostPID(t, cs, haNS, pod, "redis"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "delete", "pod", "-n", haNS, pod, "--wait=false")
	t.Logf("SIGKILL of the master %s (%s), its pod deleted", pod, old)
	var now string
	locktest.Eventually(t, 2*time.Minute, "the store and the lock name a new master, Ready", func() error {
		now = jsonpath(t, "{.status.master}", "clusterlockstore", haStore)
		lockMaster := jsonpath(t, "{.status.master}", "distributedlock", "-n", ns, "job")
		ready := jsonpath(t, `{.status.conditions[?(@.type=="Ready")].status}`, "distributedlock", "-n", ns, "job")
		if now == "" || now == old || lockMaster != now || ready != "True" {
			return fmt.Errorf("store master %q, the lock's %q, Ready %s", now, lockMaster, ready)
		}
		return nil
	})
	t.Logf("MEASURE Redis failover: the store and the lock name the new master %s (%s), Ready, %s after the SIGKILL (down-after 2s)", now, masterPod(t, now), ms(time.Since(begin)))

	kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "job/failover", "--timeout=3m")
	accepted, refused := workerWrites(t, cs, ns, "app=failover-worker")
	_, v, err := fence.NewRedisStore(redisFromHost(t, ns), "").Read(t.Context(), ns+"/ledger")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger %s after %d accepted and %d refused writes of %d rounds", v, accepted, refused, failoverWorkers*failoverRounds)
	if n, err := strconv.Atoi(v); err != nil || n != accepted || accepted+refused != failoverWorkers*failoverRounds {
		t.Errorf("the ledger counts %q; %d writes accepted, %d refused, want %d in all: an update was lost (two holders at once)", v, accepted, refused, failoverWorkers*failoverRounds)
	}
	if out := jsonpath(t, `{range .status.endpoints[?(@.role=="Master")]}{.address}{" "}{end}`, "clusterlockstore", haStore); strings.TrimSpace(out) != now {
		t.Errorf("the store's endpoints name the masters %q, want %s alone", out, now)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/fence"
)

// cronJobs is how many Jobs scenario 6 starts at once from the CronJob.
const cronJobs = 5

// cronManifest is config/samples/cronjob/lockctl-cronjob.yaml on the node:
// an inline lock on the namespace's Redis and a CronJob whose pods run the
// demo's fenced ledger increment (read, 200 ms, write with LOCK_FENCE)
// under `lockctl run --wait`.
func cronManifest(t *testing.T, ns string) string {
	return inlineLockManifest(ns, "nightly", "nightly", 10*time.Second) + fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: %[1]s}
spec:
  schedule: "0 2 * * *"
  suspend: true
  # The Jobs created from it count too: keep them all for their logs.
  successfulJobsHistoryLimit: 10
  failedJobsHistoryLimit: 10
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        spec:
          serviceAccountName: nightly
          restartPolicy: Never
%[3]s          containers:
          - name: settle
            image: %[2]s
            imagePullPolicy: Never
            command: ["/tools/lockctl", "run", "--lock", "%[1]s/nightly", "--wait", "2m", "--",
                      "/demo", "write-once", "--name", "$(POD_NAME)", "--namespace", "%[1]s", "--store", "$(REDIS_SERVICE_HOST):$(REDIS_SERVICE_PORT)"]
            env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
            # The demo binary also carries envtest, which makes /tmp at start.
            volumeMounts: [{name: tools, mountPath: /tools}, {name: tmp, mountPath: /tmp}]
            securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
`, ns, env(t, "DEMO_IMAGE"), lockctlInit("          ", "tmp"))
}

// TestScenario6CronJob: five Jobs created at once from a CronJob whose pods
// run a read-modify-write of a fenced ledger under lockctl run: every Job
// completes (the ones that waited got their turn), every write was
// accepted, and the ledger counts five (no two critical sections at once:
// an overlap would lose an increment).
func TestScenario6CronJob(t *testing.T) {
	cluster(t)
	const ns = "cron"
	kubectl(t, "create", "namespace", ns)
	apply(t, redisManifest(t, ns))
	kubectl(t, "rollout", "status", "-n", ns, "deployment/redis", "--timeout=2m")
	apply(t, cronManifest(t, ns))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/nightly", "--timeout=2m")

	begin := time.Now()
	for i := range cronJobs {
		kubectl(t, "create", "job", "-n", ns, "--from=cronjob/nightly", fmt.Sprintf("nightly-%d", i))
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "job", "--all", "--timeout=3m")
	t.Logf("MEASURE %d Jobs from the CronJob, one critical section at a time: all complete after %s", cronJobs, ms(time.Since(begin)))

	accepted := 0
	for i := range cronJobs {
		logs := kubectl(t, "logs", "-n", ns, fmt.Sprintf("job/nightly-%d", i), "-c", "settle")
		if strings.Contains(logs, `"kind":"write","fence"`) && strings.Contains(logs, `"accepted":true`) {
			accepted++
		} else {
			t.Errorf("job nightly-%d: no accepted write:\n%s", i, logs)
		}
	}
	// The ledger, read from the host on the bridge (the Redis pod's address).
	ip := jsonpath(t, "{.items[0].status.podIP}", "pods", "-n", ns, "-l", "app=redis")
	rc := redis.NewClient(&redis.Options{Addr: ip + ":6379"})
	defer func() { _ = rc.Close() }()
	_, v, err := fence.NewRedisStore(rc, "").Read(t.Context(), ns+"/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := strconv.Atoi(v); err != nil || n != cronJobs {
		t.Errorf("the ledger counts %q after %d Jobs of %d accepted writes: an increment was lost (two critical sections at once)", v, cronJobs, accepted)
	}
}

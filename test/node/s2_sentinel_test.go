/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
)

const (
	// haNS holds the Redis StatefulSet and its Sentinels; haStore is the
	// ClusterLockStore on them; haTenants are its two tenant namespaces.
	haNS     = "redis-ha"
	haStore  = "ha"
	haMaster = "locks"
)

var haTenants = []string{"ha-a", "ha-b"}

// redisHAManifest is Redis as users run it with Sentinel, from the image
// assembled from Debian's redis-server: a StatefulSet of three servers
// (append-only file fsynced on every write, so that a restarted container
// keeps its data; which is the master is set afterwards, as an operator's
// bootstrap would: there is no cluster DNS to name it in advance) and the
// Service the Sentinels will be reached through.
func redisHAManifest(t *testing.T) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Service
metadata: {name: redis-sentinel, namespace: %[1]s}
spec:
  selector: {app: sentinel}
  ports: [{name: sentinel, port: 26379, targetPort: 26379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis, namespace: %[1]s}
spec:
  serviceName: redis
  replicas: 3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      terminationGracePeriodSeconds: 5
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: redis
        image: %[2]s
        imagePullPolicy: Never
        args: ["--port", "6379", "--protected-mode", "no", "--dir", "/data", "--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        ports: [{name: redis, containerPort: 6379}]
        readinessProbe: {tcpSocket: {port: redis}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
`, haNS, env(t, "REDIS_IMAGE"))
}

// sentinelManifest is three Sentinels (a StatefulSet behind the Service
// redis-sentinel) monitoring the master at address master (a pod IP), with
// a failover 2 s after it stops answering. A Sentinel rewrites its config
// file: the image's /bin/sh makes an empty one in an emptyDir.
func sentinelManifest(t *testing.T, master string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sentinel, namespace: %[1]s}
spec:
  serviceName: redis-sentinel
  replicas: 3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: sentinel}}
  template:
    metadata: {labels: {app: sentinel}}
    spec:
      terminationGracePeriodSeconds: 5
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: sentinel
        image: %[2]s
        imagePullPolicy: Never
        command:
        - /bin/sh
        - -c
        - |
          : > /data/sentinel.conf
          exec /redis-server /data/sentinel.conf --sentinel --port 26379 --protected-mode no \
            --sentinel monitor %[3]s %[4]s 6379 2 \
            --sentinel down-after-milliseconds %[3]s 2000 --sentinel failover-timeout %[3]s 10000
        ports: [{name: sentinel, containerPort: 26379}]
        readinessProbe: {tcpSocket: {port: sentinel}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
`, haNS, env(t, "REDIS_IMAGE"), haMaster, master)
}

// haStoreManifest is a ClusterLockStore on the Sentinels (addressed by
// their Service's ClusterIP: no cluster DNS) with isolation ACL, and in
// each tenant namespace a DistributedLock "job" on it (waitForReplicas 1)
// and a ServiceAccount "tenant" bound to the documented pod Role: read the
// lock, get the store's credentials Secret (redlease-<store>).
func haStoreManifest(sentinels string) string {
	m := fmt.Sprintf(`apiVersion: redlease.io/v1alpha1
kind: ClusterLockStore
metadata: {name: %[1]s}
spec:
  redis: {mode: Sentinel, sentinel: {masterName: %[2]s, addresses: ["%[3]s:26379"]}}
  tenants:
    namespaceSelector: {matchLabels: {redlease.io/ha: "true"}}
    isolation: ACL
`, haStore, haMaster, sentinels)
	for _, ns := range haTenants {
		m += fmt.Sprintf(`---
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s, labels: {redlease.io/ha: "true"}}
---
apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: job, namespace: %[1]s}
spec:
  storeRef: {kind: ClusterLockStore, name: %[2]s}
  ttl: 5s
  safety: {waitForReplicas: 1}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant-lock, namespace: %[1]s}
rules:
- apiGroups: ["redlease.io"]
  resources: ["distributedlocks"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: ["redlease-%[2]s"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-lock, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant-lock}
subjects: [{kind: ServiceAccount, name: tenant, namespace: %[1]s}]
`, ns, haStore)
	}
	return m
}

// intrudeJob is a Job in namespace ns whose pod, as the ServiceAccount
// "tenant", takes its own lock and then tries the other tenant's key and
// credentials Secret (demo intrude).
func intrudeJob(t *testing.T, ns, other string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: intrude, namespace: %[1]s}
spec:
  backoffLimit: 0
  template:
    spec:
      serviceAccountName: tenant
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: intrude
        image: %[3]s
        imagePullPolicy: Never
        command: ["/demo", "intrude", "--namespace", "%[1]s", "--lock", "job", "--other", "%[2]s/job",
                  "--other-namespace", "%[2]s", "--secret", "redlease-%[4]s"]
        volumeMounts: [{name: tmp, mountPath: /tmp}]
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: ["ALL"]}}
      volumes: [{name: tmp, emptyDir: {}}]
`, ns, other, env(t, "DEMO_IMAGE"), haStore)
}

// TestScenario2SentinelTenants: a ClusterLockStore with isolation ACL on
// Redis in pods (a StatefulSet of a master and two replicas, three
// Sentinels behind a Service): the store is Ready with the master and both
// replicas found through Sentinel; in each of two tenant namespaces a pod
// under the documented pod Role only takes its own lock (pkg/kube, its
// service account), its Redis user gets NOPERM on the other tenant's key,
// and the API server refuses it the other tenant's credentials Secret.
func TestScenario2SentinelTenants(t *testing.T) {
	cluster(t)
	apply(t, redisHAManifest(t))
	kubectl(t, "rollout", "status", "-n", haNS, "statefulset/redis", "--timeout=3m")
	master := bootstrapReplication(t)
	apply(t, sentinelManifest(t, master))
	kubectl(t, "rollout", "status", "-n", haNS, "statefulset/sentinel", "--timeout=3m")
	sentinels := jsonpath(t, "{.spec.clusterIP}", "service", "-n", haNS, "redis-sentinel")
	apply(t, haStoreManifest(sentinels))
	kubectl(t, "wait", "--for=condition=Ready", "clusterlockstore/"+haStore, "--timeout=2m")
	locktest.Eventually(t, time.Minute, "the store's endpoints: a master and two replicas", func() error {
		roles := jsonpath(t, `{range .status.endpoints[?(@.reachable==true)]}{.role}{" "}{end}`, "clusterlockstore", haStore)
		if strings.Count(roles, "Master") != 1 || strings.Count(roles, "Replica") != 2 {
			return fmt.Errorf("reachable endpoints' roles: %s", roles)
		}
		return nil
	})
	t.Logf("store %s: master %s", haStore, jsonpath(t, "{.status.master}", "clusterlockstore", haStore))

	for i, ns := range haTenants {
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "distributedlock/job", "--timeout=2m")
		apply(t, intrudeJob(t, ns, haTenants[1-i]))
	}
	for i, ns := range haTenants {
		if out, err := kubectlErr(t, "wait", "-n", ns, "--for=condition=Complete", "job/intrude", "--timeout=2m"); err != nil {
			t.Fatalf("%s's intrude Job did not complete: %v\n%s\n%s", ns, err, out, kubectl(t, "logs", "-n", ns, "job/intrude"))
		}
		logs := kubectl(t, "logs", "-n", ns, "job/intrude")
		for _, want := range []string{`"kind":"acquired"`, "NOPERM on " + haTenants[1-i] + "/job", `"kind":"other-secret","detail":"secrets \"redlease-` + haStore + `\" is forbidden`} {
			if !strings.Contains(logs, want) {
				t.Errorf("%s's pod: no %s in its log:\n%s", ns, want, logs)
			}
		}
		t.Logf("%s's pod took its lock; %s's key: NOPERM; %s's Secret: forbidden", ns, haTenants[1-i], haTenants[1-i])
	}
}

// bootstrapReplication makes redis-0 the master and the two others its
// replicas (REPLICAOF from the host, on the bridge), waits until both are
// in sync, and returns the master's pod IP.
func bootstrapReplication(t *testing.T) string {
	t.Helper()
	ip := func(pod string) string { return jsonpath(t, "{.status.podIP}", "pod", "-n", haNS, pod) }
	master := ip("redis-0")
	for _, pod := range []string{"redis-1", "redis-2"} {
		rc := redis.NewClient(&redis.Options{Addr: ip(pod) + ":6379"})
		if err := rc.ReplicaOf(t.Context(), master, "6379").Err(); err != nil {
			t.Fatal(err)
		}
		locktest.Eventually(t, time.Minute, pod+" in sync with "+master, func() error {
			info, err := rc.Info(t.Context(), "replication").Result()
			if err != nil || !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("%s: %w", info, err)
			}
			return nil
		})
		_ = rc.Close()
	}
	return master
}

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
)

// TestScenario9Uninstall: with a ClusterLockStore under isolation ACL (its
// finalizer redlease.io/acl-users on, a tenant's lock Ready), helm
// uninstall runs the chart's post-delete hook, which takes the finalizer
// off; deleting the store, then the CRDs, finishes with nothing stuck.
// Before the hook a store deleted after the uninstall waited forever for
// the manager that was gone.
func TestScenario9Uninstall(t *testing.T) {
	cluster(t)
	const redisNS, tenant = "acl-redis", "tenant-a"
	kubectl(t, "create", "namespace", redisNS)
	apply(t, redisManifest(t, redisNS))
	kubectl(t, "create", "namespace", tenant)
	kubectl(t, "label", "namespace", tenant, "redlease.io/locks=true")
	apply(t, fmt.Sprintf(`apiVersion: redlease.io/v1alpha1
kind: ClusterLockStore
metadata: {name: acl}
spec:
  redis: {mode: Standalone, service: {namespace: %s, name: redis, port: 6379}}
  tenants:
    namespaceSelector: {matchLabels: {redlease.io/locks: "true"}}
    isolation: ACL
---
apiVersion: redlease.io/v1alpha1
kind: DistributedLock
metadata: {name: job, namespace: %s}
spec:
  storeRef: {kind: ClusterLockStore, name: acl}
  ttl: 10s
`, redisNS, tenant))
	kubectl(t, "wait", "--for=condition=Ready", "clusterlockstore/acl", "--timeout=2m")
	kubectl(t, "wait", "-n", tenant, "--for=condition=Ready", "distributedlock/job", "--timeout=2m")
	if f := jsonpath(t, "{.metadata.finalizers}", "clusterlockstore", "acl"); !strings.Contains(f, "redlease.io/acl-users") {
		t.Fatalf("the ACL store's finalizers %s, want redlease.io/acl-users", f)
	}

	helm(t, "uninstall", release, "-n", operatorNS, "--wait", "--timeout", "3m")
	if f := jsonpath(t, "{.metadata.finalizers}", "clusterlockstore", "acl"); f != "" {
		t.Fatalf("after helm uninstall the store keeps finalizers %s: deleting it would wait for a manager that is gone", f)
	}
	begin := time.Now()
	kubectl(t, "delete", "clusterlockstore", "acl", "--timeout=30s")
	kubectl(t, "delete", "crd", "distributedlocks.redlease.io", "lockstores.redlease.io", "clusterlockstores.redlease.io", "lockreleases.redlease.io", "--timeout=1m")
	t.Logf("the store and the CRDs deleted in %s after the uninstall", ms(time.Since(begin)))
	if out := kubectl(t, "get", "all,serviceaccounts,roles,rolebindings", "-n", operatorNS, "-o", "name"); strings.Contains(out, "redlease") {
		t.Errorf("left in %s after helm uninstall:\n%s", operatorNS, out)
	}
	if out := kubectl(t, "get", "clusterroles,clusterrolebindings", "-o", "name"); strings.Contains(out, "redlease") {
		t.Errorf("cluster-scoped RBAC left after helm uninstall:\n%s", out)
	}
}

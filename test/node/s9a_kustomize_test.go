/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/locktest"
)

// managersUp waits until the manager Deployment in operatorNS has want
// Ready pods and, when there are several, one of them holds the leader
// election Lease.
func managersUp(t *testing.T, cs *kubernetes.Clientset, deployment string, want int) {
	t.Helper()
	kubectl(t, "rollout", "status", "-n", operatorNS, "deployment/"+deployment, "--timeout=3m")
	locktest.Eventually(t, time.Minute, fmt.Sprintf("%d manager pods Ready", want), func() error {
		pods, err := cs.CoreV1().Pods(operatorNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" && p.DeletionTimestamp == nil {
					ready[p.Name] = true
				}
			}
		}
		if len(ready) != want {
			return fmt.Errorf("Ready: %v", ready)
		}
		if l := leadingManager(t, cs); want > 1 && !ready[l] {
			return fmt.Errorf("the Lease is held by %q, not a Ready pod of %v", l, ready)
		}
		return nil
	})
}

// sampleFiles are config/samples' manifests, as its kustomization lists
// them.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "config", "samples", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range k.Resources {
		files = append(files, filepath.Join("config", "samples", r))
	}
	return files
}

// samplesReconciled applies each sample with kubectl apply -f into a new
// namespace, waits until every sample lock has a Ready condition from the
// manager, and deletes them again.
func samplesReconciled(t *testing.T, ns string) {
	t.Helper()
	kubectl(t, "create", "namespace", ns)
	args := []string{"-n", ns}
	for _, f := range sampleFiles(t) {
		args = append(args, "-f", f)
	}
	kubectl(t, append([]string{"apply"}, args...)...)
	locks := strings.Fields(jsonpath(t, "{.items[*].metadata.name}", "distributedlocks", "-n", ns))
	if len(locks) < 10 {
		t.Fatalf("%d DistributedLocks from the samples, want 10: %v", len(locks), locks)
	}
	locktest.Eventually(t, 2*time.Minute, "every sample lock reconciled", func() error {
		for _, l := range locks {
			if jsonpath(t, `{.status.conditions[?(@.type=="Ready")].status}`, "distributedlock", "-n", ns, l) == "" {
				return fmt.Errorf("%s has no Ready condition", l)
			}
		}
		return nil
	})
	kubectl(t, append([]string{"delete", "--timeout=2m"}, args...)...)
	kubectl(t, "delete", "namespace", ns, "--timeout=2m")
}

// TestScenario1Kustomize: the second half of scenario 1, after scenario 9
// removed the chart and the CRDs: kubectl apply -k config/default on that
// fresh state brings up two manager replicas (one leading) and serves the
// CRDs; the samples, applied with kubectl apply -f, are accepted and
// reconciled; kubectl delete -k removes it all again.
func TestScenario1Kustomize(t *testing.T) {
	cs := cluster(t)
	if out := kubectl(t, "get", "crd", "-o", "name"); strings.Contains(out, "redlease.io") {
		t.Fatalf("needs scenario 9 before it (the chart and CRDs uninstalled): %s", out)
	}
	kubectl(t, "apply", "-k", "config/default")
	managersUp(t, cs, "redlease-controller-manager", 2)
	samplesReconciled(t, "samples-kustomize")
	kubectl(t, "delete", "-k", "config/default", "--timeout=2m")
	if out := kubectl(t, "get", "crd", "-o", "name"); strings.Contains(out, "redlease.io") {
		t.Errorf("CRDs left after kubectl delete -k config/default: %s", out)
	}
}

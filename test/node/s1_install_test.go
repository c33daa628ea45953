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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/internal/locktest"
)

const (
	release    = "redlease"
	operatorNS = "redlease-system"
)

// helmInstall installs the chart from this clone with two manager replicas
// (leader election on, as by default), the images make test-node imported
// (never pulled), and extra --set values.
func helmInstall(t *testing.T, extra ...string) {
	t.Helper()
	args := []string{"install", release, "charts/redlease", "-n", operatorNS, "--create-namespace", "--wait", "--timeout", "3m",
		"--set", "replicaCount=2", "--set", "image.pullPolicy=Never", "--set", "lockctl.image.pullPolicy=Never"}
	helm(t, append(args, extra...)...)
}

// TestScenario1Install: helm install with two manager replicas on the node:
// both pods Ready (images, user, probes), one of them leading through the
// Lease (in-cluster config, the service account's RBAC), helm test passes,
// the CRDs are served, and the samples are accepted and reconciled by the
// manager in its pod.
func TestScenario1Install(t *testing.T) {
	cs := cluster(t)
	helmInstall(t)

	pods, err := cs.CoreV1().Pods(operatorNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				names[p.Name] = true
			}
		}
	}
	if len(names) != 2 {
		t.Fatalf("%d manager pods Ready, want 2: %v", len(names), names)
	}
	locktest.Eventually(t, time.Minute, "a manager pod leads", func() error {
		leases, err := cs.CoordinationV1().Leases(operatorNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items {
			if h := l.Spec.HolderIdentity; h != nil && names[strings.SplitN(*h, "_", 2)[0]] {
				t.Logf("leader %s (Lease %s)", *h, l.Name)
				return nil
			}
		}
		return fmt.Errorf("no Lease in %s held by %v", operatorNS, names)
	})

	helm(t, "test", release, "-n", operatorNS, "--timeout", "3m")

	out := kubectl(t, "api-resources", "--api-group=redlease.io", "-o", "name")
	for _, r := range []string{"distributedlocks.redlease.io", "lockstores.redlease.io", "clusterlockstores.redlease.io"} {
		if !strings.Contains(out, r) {
			t.Errorf("%s not served; api-resources:\n%s", r, out)
		}
	}

	// The samples: accepted by the CRDs' validation, and reconciled (each
	// lock gets a Ready condition: False here, their Redis servers are
	// not there).
	const ns = "samples"
	kubectl(t, "create", "namespace", ns)
	kubectl(t, "apply", "-n", ns, "-k", "config/samples")
	locks := strings.Fields(jsonpath(t, "{.items[*].metadata.name}", "distributedlocks", "-n", ns))
	if len(locks) < 10 {
		t.Fatalf("%d DistributedLocks from config/samples, want 10: %v", len(locks), locks)
	}
	locktest.Eventually(t, 2*time.Minute, "every sample lock reconciled", func() error {
		for _, l := range locks {
			if jsonpath(t, `{.status.conditions[?(@.type=="Ready")].status}`, "distributedlock", "-n", ns, l) == "" {
				return fmt.Errorf("%s has no Ready condition", l)
			}
		}
		return nil
	})
	kubectl(t, "delete", "-n", ns, "-k", "config/samples", "--timeout", "2m")
	kubectl(t, "delete", "namespace", ns, "--timeout", "2m")
}

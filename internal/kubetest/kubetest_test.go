/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kubetest_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redleasev1alpha1 "github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

const wantVersion = "v1.37.2"

// TestSharedAPIServer checks the shared API server: it answers, reports the
// version the tools were stamped with, serves the DistributedLock CRD, and
// Namespace gives each caller a fresh namespace.
func TestSharedAPIServer(t *testing.T) {
	env := kubetest.Shared(t)
	if again := kubetest.Shared(t); again != env {
		t.Fatalf("Shared returned a second API server")
	}

	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	if v.GitVersion != wantVersion {
		t.Errorf("API server version = %q, want %q (hack/install-tools.sh stamps it)", v.GitVersion, wantVersion)
	}

	resources, err := dc.ServerResourcesForGroupVersion(redleasev1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatalf("discovery of %s: %v", redleasev1alpha1.GroupVersion, err)
	}
	var found bool
	for _, r := range resources.APIResources {
		if r.Name != "distributedlocks" {
			continue
		}
		found = true
		if r.Kind != "DistributedLock" || !r.Namespaced {
			t.Errorf("distributedlocks: kind %q namespaced %v, want DistributedLock, namespaced", r.Kind, r.Namespaced)
		}
		if !slices.Contains(r.ShortNames, "dlock") {
			t.Errorf("distributedlocks short names = %v, want dlock", r.ShortNames)
		}
		if !slices.Contains(r.Categories, "redlease") {
			t.Errorf("distributedlocks categories = %v, want redlease", r.Categories)
		}
	}
	if !found {
		t.Fatalf("distributedlocks not served; %s serves %v", redleasev1alpha1.GroupVersion, resources.APIResources)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	if ns1 == ns2 || !strings.HasPrefix(ns1, "test-") {
		t.Errorf("Namespace returned %q and %q, want two fresh test- names", ns1, ns2)
	}
	var got corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns1}, &got); err != nil {
		t.Errorf("namespace %s: %v", ns1, err)
	}
	var list redleasev1alpha1.DistributedLockList
	if err := env.Client.List(ctx, &list); err != nil {
		t.Fatalf("listing DistributedLocks through the typed client: %v", err)
	}
}

// TestStartStops checks that Start gives a test its own API server and that
// Stop shuts it down.
func TestStartStops(t *testing.T) {
	env := kubetest.Start(t)
	if env == kubetest.Shared(t) {
		t.Fatalf("Start returned the shared API server")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := dc.ServerVersion(); err == nil {
		t.Errorf("the API server still answers after Stop")
	}
}

// TestMissingBinariesFail checks that missing binaries are an error that
// says how to build them (tests fail on it, they never skip).
func TestMissingBinariesFail(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	t.Setenv("TEST_ASSET_KUBE_APISERVER", "")
	t.Setenv("TEST_ASSET_ETCD", "")
	env, err := kubetest.New()
	if err == nil {
		_ = env.Stop()
		t.Fatalf("New started an API server from an empty KUBEBUILDER_ASSETS")
	}
	for _, want := range []string{"kube-apiserver", "etcd", "$KUBEBUILDER_ASSETS", "make tools", "hack/install-tools.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/go.mod") //nolint:gosec // G304: go.mod of this repository
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "module github.com/redlease/redlease\n") {
		t.Errorf("RepoRoot = %s, whose go.mod is not redlease's", root)
	}
}

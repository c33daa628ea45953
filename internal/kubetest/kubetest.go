/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kubetest starts a real Kubernetes API server (envtest: etcd and
// kube-apiserver built from source by hack/install-tools.sh) with the
// redlease CRDs installed, for tests in other packages.
//
// One API server per test:
//
//	env := kubetest.Start(t) // stopped when t ends
//
// One API server per test binary (it takes seconds to start), shared by the
// package's tests:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		env := kubetest.Shared(t)
//		ns := env.Namespace(t)
//		...
//	}
//
// Binaries come from $KUBEBUILDER_ASSETS when it is set, else from <repo>/bin
// (TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD override single binaries).
// Missing binaries fail the test: they are never a reason to skip.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	redleasev1alpha1 "github.com/redlease/redlease/api/v1alpha1"
)

// MissingBinariesHint is what a test prints when kube-apiserver or etcd is
// missing.
const MissingBinariesHint = "run `make tools` (hack/install-tools.sh) to build kube-apiserver and etcd from source"

// Env is a running API server with the redlease CRDs installed.
type Env struct {
	// Config reaches the API server as a cluster admin (system:masters).
	Config *rest.Config
	// Client is a controller-runtime client (no cache) whose scheme knows
	// client-go's types and redlease.io/v1alpha1.
	Client client.Client
	// Scheme is Client's scheme.
	Scheme *runtime.Scheme

	env      *envtest.Environment
	stopOnce sync.Once
	stopErr  error
}

// NewScheme returns a scheme with client-go's built-in types and
// redlease.io/v1alpha1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := redleasev1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Option changes how New and Start set up the API server.
type Option func(*options)

type options struct{ crds bool }

// WithoutCRDs starts an API server without the redlease CRDs, for tests
// that install them the way users do (helm install, kubectl apply -k).
func WithoutCRDs() Option { return func(o *options) { o.crds = false } }

// Start starts an API server for t and stops it when t ends. It fails t
// (never skips) when the API server cannot start.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e, err := New(opts...)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("kubetest: stopping the API server: %v", err)
		}
	})
	return e
}

// New starts an API server; the caller must Stop it. Tests should prefer
// Start or Shared, which stop it for them.
func New(opts ...Option) (*Env, error) {
	o := options{crds: true}
	for _, opt := range opts {
		opt(&o)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	apiServer, etcd, err := binaries(root)
	if err != nil {
		return nil, err
	}
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		Scheme:                s,
		ErrorIfCRDPathMissing: true,
	}
	if o.crds {
		te.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
	}
	te.ControlPlane.GetAPIServer().Path = apiServer
	te.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}

	cfg, err := te.Start()
	if err != nil {
		// Start may have left processes behind when it failed late.
		_ = te.Stop()
		return nil, fmt.Errorf("starting envtest (kube-apiserver %s, etcd %s): %w", apiServer, etcd, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: te}, nil
}

// Stop stops the API server and etcd. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.env.Stop() })
	return e.stopErr
}

// Namespace creates a namespace with a fresh name for t and returns its name.
// It is deleted when t ends (envtest runs no namespace controller, so its
// objects stay in etcd until the API server stops).
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("kubetest: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("kubetest: deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var shared struct {
	sync.Mutex
	inMain  bool // Main is running the tests
	env     *Env
	err     error
	started bool
}

// Main runs a test binary's tests (m.Run) and then stops the API server that
// Shared started, if any. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
func Main(m *testing.M) int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()

	code := m.Run()

	shared.Lock()
	defer shared.Unlock()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: stopping the shared API server: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the test binary's API server, starting it on first use.
// The package must call Main from TestMain (Shared fails t otherwise), which
// stops the server after the last test. Tests sharing it should work in
// their own Namespace.
func Shared(t testing.TB) *Env {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.inMain {
		t.Fatalf("kubetest: Shared needs TestMain to call kubetest.Main(m), which stops the API server after the tests")
	}
	if !shared.started {
		shared.started = true
		shared.env, shared.err = New()
	}
	if shared.err != nil {
		t.Fatalf("kubetest: %v", shared.err)
	}
	return shared.env
}

// RepoRoot returns the repository's root: the directory of the redlease
// module's go.mod, found by walking up from the working directory (a
// test's working directory is its package), past the go.mod of a nested
// module such as test/monitoring.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && rootModule.Match(b) { //nolint:gosec // G304: the go.mod files above the working directory
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod of github.com/redlease/redlease above the working directory")
		}
		dir = parent
	}
}

// rootModule matches the redlease module's go.mod.
var rootModule = regexp.MustCompile(`(?m)^module github\.com/redlease/redlease\s*$`)

// binaries returns the paths of kube-apiserver and etcd, or an error that
// says how to build them.
func binaries(root string) (apiServer, etcd string, err error) {
	dir, from := filepath.Join(root, "bin"), "<repo>/bin"
	if v, ok := os.LookupEnv("KUBEBUILDER_ASSETS"); ok && v != "" {
		dir, from = v, "$KUBEBUILDER_ASSETS"
	}
	apiServer = envOr("TEST_ASSET_KUBE_APISERVER", filepath.Join(dir, "kube-apiserver"))
	etcd = envOr("TEST_ASSET_ETCD", filepath.Join(dir, "etcd"))
	var missing []string
	for _, p := range []string{apiServer, etcd} {
		fi, err := os.Stat(p) // follows bin/'s symlinks into the cache
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("missing %v (looked in %s = %s): %s", missing, from, dir, MissingBinariesHint)
	}
	return apiServer, etcd, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// KubeconfigFile writes a kubeconfig for the API server (cluster admin) into
// t's temp dir and returns its path, for tests that run real binaries.
func (e *Env) KubeconfigFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		t.Fatalf("kubetest: writing a kubeconfig: %v", err)
	}
	return path
}

// KubeconfigAs writes a kubeconfig for the API server that impersonates
// user (and groups) into t's temp dir and returns its path: what a
// process run as that user, with no more rights, does.
func (e *Env) KubeconfigAs(t testing.TB, user string, groups ...string) string {
	t.Helper()
	cfg, err := clientcmd.Load(e.env.KubeConfig)
	if err != nil {
		t.Fatalf("kubetest: reading the kubeconfig: %v", err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = user, groups
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-as")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("kubetest: writing a kubeconfig: %v", err)
	}
	return path
}

// KubeconfigAsServiceAccount is KubeconfigAs for the ServiceAccount
// ns/name, with the groups the API server gives its tokens.
func (e *Env) KubeconfigAsServiceAccount(t testing.TB, ns, name string) string {
	t.Helper()
	return e.KubeconfigAs(t, "system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
}

// WriteKubeconfig writes a kubeconfig for the API server (cluster admin) to
// path, for programs (make demo) that run real binaries against it.
func (e *Env) WriteKubeconfig(path string) error {
	return os.WriteFile(path, e.env.KubeConfig, 0o600)
}

package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redisprobe"
)

// The package's tests share one API server; each test runs its own manager
// (with its own probe interval) restricted to its own namespace.
func TestMain(m *testing.M) {
	// controller-runtime's global logger (used by a few of its internals)
	// goes to a sink the value-leak test also searches.
	logf.SetLogger(logr.New(globalLogs))
	os.Exit(kubetest.Main(m))
}

// globalLogs captures controller-runtime's global logger.
var globalLogs = newLogSink()

// waitTimeout bounds every wait for the controller: generous, because the
// machine is small and shared; a passing wait usually takes well under a
// second or two.
const waitTimeout = 30 * time.Second

type harnessOptions struct {
	probeInterval time.Duration
	// dialer maps addresses (tests put non-loopback addresses in
	// EndpointSlices, whose validation refuses loopback).
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// concurrency is MaxConcurrentReconciles (default 2).
	concurrency int
	// env is the API server (default: the package's shared one).
	env *kubetest.Env
	// namespaces is how many namespaces the manager caches besides h.ns
	// (tenants of a ClusterLockStore, an attacker's namespace); h.extra
	// names them.
	namespaces int
	// startLater leaves the manager stopped until h.start (resources
	// created before the manager starts).
	startLater bool
	// apiReader wraps the manager's uncached reader (to count reads).
	apiReader func(client.Reader) client.Reader
	// discardLogs drops the manager's logs instead of keeping every line
	// for the test to search: the scale benchmarks measure the manager's
	// memory, and 10,000 locks' logs would be most of it.
	discardLogs bool
	// after is a harness whose manager was stopped (h.stop): this one
	// takes over its namespaces, as a restarted controller does.
	after *harness
}

// managerLogger is the manager's logger: keep, or with discard nothing,
// and then nothing from controller-runtime's global logger either (its
// work queue logs its whole state at debug levels).
func managerLogger(keep *logSink, discard bool) logr.Logger {
	if discard {
		globalLogs.silence()
		return logr.Discard()
	}
	return logr.New(keep)
}

// harness is a manager running the DistributedLock controller in-process
// against the shared API server, for one test namespace.
type harness struct {
	t   testing.TB
	env *kubetest.Env
	ns  string
	// extra are the further namespaces of harnessOptions.namespaces.
	extra []string
	c     client.Client
	logs  *logSink
	pool  *redisprobe.Pool
	r     *DistributedLockReconciler

	mu         sync.Mutex
	reconciles map[string]*atomic.Int64
	// start starts the manager (once; newHarness calls it unless
	// startLater).
	start func()
	// stop stops the manager and closes its pool (once; at the test's
	// end at the latest).
	stop func()
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	env := o.env
	if env == nil {
		env = kubetest.Shared(t)
	}
	h := &harness{
		t: t, env: env, c: env.Client,
		logs:       newLogSink(),
		reconciles: map[string]*atomic.Int64{},
	}
	if o.probeInterval == 0 {
		o.probeInterval = time.Second
	}
	if o.after != nil {
		h.ns, h.extra = o.after.ns, o.after.extra
	} else {
		h.ns = env.Namespace(t)
		for range o.namespaces {
			h.extra = append(h.extra, env.Namespace(t))
		}
	}
	namespaces := map[string]cache.Config{h.ns: {}}
	for _, ns := range h.extra {
		namespaces[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 managerLogger(h.logs, o.discardLogs),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultTransform:  CacheTransform(),
			DefaultNamespaces: namespaces,
			// ClusterLockStores are cluster-scoped, so every test's manager
			// would reconcile every test's stores (and prune their tenant
			// users, finding none of their locks in its own namespaces).
			// Each manager sees only the stores its test labels with
			// h.ns (see createClusterStore); production runs one manager.
			ByObject: map[client.Object]cache.ByObject{
				&v1alpha1.ClusterLockStore{}: {Label: labels.SelectorFromSet(labels.Set{harnessLabel: h.ns})},
			},
		},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating the manager: %v", err)
	}
	h.pool = redisprobe.NewPool(redisprobe.PoolOptions{Dialer: o.dialer})
	apiReader := mgr.GetAPIReader()
	if o.apiReader != nil {
		apiReader = o.apiReader(apiReader)
	}
	h.r = NewDistributedLockReconciler(mgr.GetClient(), apiReader, mgr.GetEventRecorder("redlease-test"), Options{
		ProbeInterval: o.probeInterval,
		Pool:          h.pool,
	})
	ctx, cancel := context.WithCancel(context.Background())
	counting := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		h.counter(req.Name).Add(1)
		return h.r.Reconcile(ctx, req)
	})
	if o.concurrency == 0 {
		o.concurrency = 2
	}
	if err := h.r.setup(ctx, mgr, controller.Options{MaxConcurrentReconciles: o.concurrency}, counting); err != nil {
		cancel()
		t.Fatalf("setting up the controller: %v", err)
	}
	done := make(chan error, 1)
	var started sync.Once
	h.start = func() { started.Do(func() { go func() { done <- mgr.Start(ctx) }() }) }
	if !o.startLater {
		h.start()
	}
	var stopped sync.Once
	h.stop = func() {
		stopped.Do(func() {
			cancel()
			h.start() // so that done is sent (the context is cancelled already)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("the manager did not stop within 30s")
			}
			if err := h.pool.Close(); err != nil {
				t.Logf("closing the pool: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("manager log tail:\n%s", h.logs.tail(60))
		}
	})
	return h
}

// counter counts the reconciles of the lock named name.
func (h *harness) counter(name string) *atomic.Int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.reconciles[name]
	if c == nil {
		c = &atomic.Int64{}
		h.reconciles[name] = c
	}
	return c
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

// createStore creates a Standalone LockStore name on addr in the
// harness's namespace (its reconcile makes it Ready; nothing waits here).
func (h *harness) createStore(t testing.TB, name, addr string) {
	t.Helper()
	ls := &v1alpha1.LockStore{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: v1alpha1.LockStoreSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}}}
	if err := h.c.Create(h.ctx(), ls); err != nil {
		t.Fatal(err)
	}
}

// create creates a DistributedLock named name in the test namespace.
func (h *harness) create(name string, spec v1alpha1.DistributedLockSpec) *v1alpha1.DistributedLock {
	h.t.Helper()
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: spec}
	if err := h.c.Create(h.ctx(), dl); err != nil {
		h.t.Fatalf("creating DistributedLock %s: %v", name, err)
	}
	return dl
}

func (h *harness) get(name string) (*v1alpha1.DistributedLock, error) {
	var dl v1alpha1.DistributedLock
	err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &dl)
	return &dl, err
}

// waitFor polls the lock until cond returns nil, failing the test with
// cond's last error and the status after waitTimeout.
func (h *harness) waitFor(name, what string, cond func(*v1alpha1.DistributedLock) error) *v1alpha1.DistributedLock {
	h.t.Helper()
	return h.waitForIn(h.ns, name, what, cond)
}

// waitForIn is waitFor for the lock name in namespace ns.
func (h *harness) waitForIn(ns, name, what string, cond func(*v1alpha1.DistributedLock) error) *v1alpha1.DistributedLock {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last error
	var dl *v1alpha1.DistributedLock
	for {
		dl = &v1alpha1.DistributedLock{}
		err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: ns, Name: name}, dl)
		if err == nil {
			if last = cond(dl); last == nil {
				return dl
			}
		} else {
			last = err
		}
		if time.Now().After(deadline) {
			st, _ := yaml.Marshal(dl.Status)
			h.t.Fatalf("%s/%s: %s: not within %v: %v\nstatus:\n%s", ns, name, what, waitTimeout, last, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually polls cond (about anything, e.g. Redis) like waitFor.
func (h *harness) eventually(what string, cond func() error) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v: %v", what, waitTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently polls cond for d (what must stay true, e.g. a setting no
// attacker may change), failing the test at the first error.
func (h *harness) consistently(what string, d time.Duration, cond func() error) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			h.t.Fatalf("%s: broken within %v: %v", what, d, err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasCondition checks a condition's status and (if not empty) reason.
func hasCondition(dl *v1alpha1.DistributedLock, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(dl.Status.Conditions, typ)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition", typ)
	case c.Status != status || (reason != "" && c.Reason != reason):
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	case c.ObservedGeneration != dl.Generation:
		return fmt.Errorf("%s describes generation %d, want %d", typ, c.ObservedGeneration, dl.Generation)
	}
	return nil
}

func isReady(dl *v1alpha1.DistributedLock) error {
	return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
}

func condition(dl *v1alpha1.DistributedLock, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(dl.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// events lists the Events regarding the lock named name.
func (h *harness) events(name string) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.ctx(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatalf("listing Events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Regarding.Kind == "DistributedLock" {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an Event with reason (and type) regarding name.
func (h *harness) waitEvent(name, eventType, reason string) eventsv1.Event {
	h.t.Helper()
	var found eventsv1.Event
	h.eventually(fmt.Sprintf("%s Event %s on %s", eventType, reason, name), func() error {
		var seen []string
		for _, e := range h.events(name) {
			if e.Reason == reason && e.Type == eventType {
				found = e
				return nil
			}
			seen = append(seen, e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("events so far: %v", seen)
	})
	return found
}

func (h *harness) createSecret(name string, data map[string]string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, StringData: data}
	if err := h.c.Create(h.ctx(), s); err != nil {
		h.t.Fatalf("creating Secret %s: %v", name, err)
	}
	return s
}

// standaloneSpec is a Standalone lock on addr.
func standaloneSpec(addr string) v1alpha1.DistributedLockSpec {
	return v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}}
}

// logSink is a logr sink that keeps every line (all verbosity levels), for
// tests that search the logs.
type logSink struct {
	mu    *sync.Mutex
	lines *[]string
	// silent drops every line (silence): for benchmarks, whose memory
	// the kept lines would dominate.
	silent *atomic.Bool
	name   string
	kv     []any
}

func newLogSink() *logSink {
	return &logSink{mu: &sync.Mutex{}, lines: &[]string{}, silent: &atomic.Bool{}}
}

// silence makes the sink (and the loggers derived from it) keep nothing.
func (s *logSink) silence() { s.silent.Store(true) }

func (s *logSink) Init(logr.RuntimeInfo) {}
func (s *logSink) Enabled(int) bool      { return !s.silent.Load() }

func (s *logSink) Info(level int, msg string, kv ...any) {
	s.add(fmt.Sprintf("V(%d) %s %q %v %v", level, s.name, msg, s.kv, kv))
}

func (s *logSink) Error(err error, msg string, kv ...any) {
	s.add(fmt.Sprintf("ERROR %s %q error=%v %v %v", s.name, msg, err, s.kv, kv))
}

func (s *logSink) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, line)
}

func (s *logSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.kv = append(append([]any(nil), s.kv...), kv...)
	return &c
}

func (s *logSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

// text is every line so far.
func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(*s.lines, "\n")
}

func (s *logSink) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := *s.lines
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// mapDialer dials the address m maps addr to (or addr itself).
func mapDialer(m map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := m[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}

var errNotYet = errors.New("not yet")

type corev1Secret = corev1.Secret

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
)

// newCheckCommand groups the checks an operator runs on an installation.
func newCheckCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an installation of the redlease operator",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(ExitUsage, fmt.Errorf("say what to check: %s", strings.Join(subcommandNames(cmd), ", ")))
		},
	}
	cmd.AddCommand(newCheckInstallCommand(stdout))
	return cmd
}

func subcommandNames(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		out = append(out, c.Name())
	}
	return out
}

// checkInterval is how often `check install` reads what it waits for: well
// below the manager's leader election retry period (2s by default), so a
// renewal is seen soon after it happens.
const checkInterval = 500 * time.Millisecond

// installFlags are the flags of `check install`.
type installFlags struct {
	kube       kubeFlags
	lease      string   // NAMESPACE/NAME of the manager's leader election Lease
	deployment string   // NAMESPACE/NAME of the manager's Deployment
	stores     []string // ClusterLockStores that must be Ready
	timeout    time.Duration
}

func newCheckInstallCommand(stdout io.Writer) *cobra.Command {
	var f installFlags
	cmd := &cobra.Command{
		Use:   "install [--leader-election-lease NAMESPACE/NAME | --manager-deployment NAMESPACE/NAME] [--cluster-lock-store NAME]... [--timeout D]",
		Short: "Check that the operator's install works: CRDs served, manager running, stores Ready",
		Long: `Check, through the Kubernetes API only, that an installation of the
operator works, waiting up to --timeout for each of:

  - the API server serves redlease.io/v1alpha1 with every kind lockctl knows
    (DistributedLock, LockStore, ClusterLockStore): the CRDs are installed;
  - with --leader-election-lease, the manager's Lease has a holder that
    renews it while this check watches (a renewal observed, not a recent
    renewTime: a crashed leader leaves a Lease that looks fresh for a while,
    and clocks differ); with --manager-deployment instead (leader election
    off), the Deployment has observed its spec and has an available replica;
  - each --cluster-lock-store NAME has Ready True for its current generation
    (a Ready condition written for an older spec does not count).

It needs get on the Lease (or the Deployment) and on the ClusterLockStores,
and API discovery (open to every authenticated user), nothing else: it is
what the chart's helm test hook runs. It prints one
line per check and exits 0 when all pass, 1 when one has not passed by
--timeout (2 for usage errors).`,
		Example: `  lockctl check install --leader-election-lease redlease-system/redlease-manager.redlease.io --cluster-lock-store shared
  lockctl check install --manager-deployment redlease-system/redlease-controller-manager --timeout 30s`,
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks, err := f.checks()
			if err != nil {
				return err
			}
			cfg, err := f.kube.restConfig()
			if err != nil {
				return err
			}
			env, err := newCheckEnv(cfg)
			if err != nil {
				return err
			}
			return runInstallCheck(cmd.Context(), stdout, env, checks, f.timeout, checkInterval)
		},
	}
	fs := cmd.Flags()
	f.kube.registerConnection(fs)
	fs.StringVar(&f.lease, "leader-election-lease", "", "the manager's leader election Lease, as NAMESPACE/NAME: a holder must renew it")
	fs.StringVar(&f.deployment, "manager-deployment", "", "without leader election: the manager's Deployment, as NAMESPACE/NAME: it must have an available replica")
	fs.StringSliceVar(&f.stores, "cluster-lock-store", nil, "a ClusterLockStore that must be Ready (repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for every check to pass")
	return cmd
}

// checks turns the flags into the list of checks, CRDs first.
func (f *installFlags) checks() ([]check, error) {
	if f.timeout <= 0 {
		return nil, exit(ExitUsage, fmt.Errorf("--timeout %v: want a positive duration", f.timeout))
	}
	list := []check{&crdCheck{}}
	switch {
	case f.lease != "" && f.deployment != "":
		return nil, exit(ExitUsage, errors.New("use --leader-election-lease or --manager-deployment, not both"))
	case f.lease != "":
		key, err := namespacedName("--leader-election-lease", f.lease)
		if err != nil {
			return nil, err
		}
		list = append(list, &leaseCheck{key: key})
	case f.deployment != "":
		key, err := namespacedName("--manager-deployment", f.deployment)
		if err != nil {
			return nil, err
		}
		list = append(list, &deploymentCheck{key: key})
	default:
		return nil, exit(ExitUsage, errors.New("say how to find the manager: --leader-election-lease NAMESPACE/NAME, or --manager-deployment NAMESPACE/NAME without leader election"))
	}
	for _, name := range f.stores {
		if name == "" || strings.Contains(name, "/") {
			return nil, exit(ExitUsage, fmt.Errorf("--cluster-lock-store %q: want the name of a ClusterLockStore (cluster-scoped: no namespace)", name))
		}
		list = append(list, &storeCheck{store: name})
	}
	return list, nil
}

func namespacedName(flag, s string) (types.NamespacedName, error) {
	ns, name, qualified, ok := splitNamespaced(s)
	if !ok || !qualified {
		return types.NamespacedName{}, exit(ExitUsage, fmt.Errorf("%s %q: want NAMESPACE/NAME", flag, s))
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// checkEnv is what the checks read the cluster with.
type checkEnv struct {
	discovery serverResources
	reader    client.Reader
	now       func() time.Time
}

// serverResources is the part of the discovery client the CRD check uses.
type serverResources interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

func newCheckEnv(cfg *rest.Config) (*checkEnv, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{coordinationv1.AddToScheme, appsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	return &checkEnv{discovery: dc, reader: c, now: time.Now}, nil
}

// check is one thing `check install` waits for. step reads the cluster
// once and says whether the check passed, with a line that explains the
// state either way. A final error (no permission to read, say) ends the
// check at once: waiting cannot fix it.
type check interface {
	name() string
	step(ctx context.Context, env *checkEnv) (passed bool, detail string, final error)
}

// runInstallCheck runs every check every interval until all have passed or
// timeout has run out, and prints each one's outcome.
func runInstallCheck(ctx context.Context, out io.Writer, env *checkEnv, checks []check, timeout, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type state struct {
		passed bool
		detail string
		final  error
	}
	states := make([]state, len(checks))
	for {
		pending := 0
		for i, c := range checks {
			if states[i].passed || states[i].final != nil {
				continue
			}
			passed, detail, final := c.step(ctx, env)
			if ctx.Err() != nil && states[i].detail != "" {
				break // cut short by the timeout: keep what the last full read said
			}
			states[i] = state{passed: passed, detail: detail, final: final}
			if !passed && final == nil {
				pending++
			}
		}
		if pending == 0 || !sleep(ctx, interval) {
			break
		}
	}
	failed := 0
	for i, c := range checks {
		s := states[i]
		switch {
		case s.passed:
			printf(out, "ok    %-8s %s\n", c.name(), s.detail)
		case s.final != nil:
			failed++
			printf(out, "FAIL  %-8s %v\n", c.name(), s.final)
		default:
			failed++
			printf(out, "FAIL  %-8s %s (not passed within %v)\n", c.name(), s.detail, timeout)
		}
	}
	if failed > 0 {
		return exit(ExitError, fmt.Errorf("install check failed: %d of %d checks did not pass", failed, len(checks)))
	}
	printf(out, "install check passed\n")
	return nil
}

// sleep waits for d, or until ctx ends (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// finalIfDenied makes an authorization error final: the check's
// ServiceAccount lacks a permission, which waiting will not grant.
func finalIfDenied(err error, what string) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// crdCheck: the API server serves every kind of redlease.io/v1alpha1 that
// this lockctl knows.
type crdCheck struct{}

func (*crdCheck) name() string { return "crds" }

func (*crdCheck) step(_ context.Context, env *checkEnv) (bool, string, error) {
	gv := v1alpha1.GroupVersion.String()
	want := apiKinds()
	list, err := env.discovery.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("the API server does not serve %s: the CRDs are not installed (crds.enabled=false without installing them elsewhere?)", gv), nil
	}
	if err != nil {
		return false, fmt.Sprintf("discovering %s: %v", gv, err), finalIfDenied(err, gv)
	}
	var missing []string
	for _, kind := range want {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind && !strings.Contains(r.Name, "/") }) {
			missing = append(missing, kind)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("the API server serves %s without %s: install the chart's CRDs (files/crds) of this version", gv, strings.Join(missing, ", ")), nil
	}
	return true, fmt.Sprintf("%s serves %s", gv, strings.Join(want, ", ")), nil
}

// apiKinds are the kinds api/v1alpha1 defines (its Go types in the
// scheme, lists aside), sorted.
func apiKinds() []string {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err) // registering our own types cannot fail
	}
	pkg := reflect.TypeFor[v1alpha1.DistributedLock]().PkgPath()
	var out []string
	for kind, t := range s.KnownTypes(v1alpha1.GroupVersion) {
		if t.PkgPath() == pkg && !strings.HasSuffix(kind, "List") {
			out = append(out, kind)
		}
	}
	slices.Sort(out)
	return out
}

// leaseCheck: the manager's leader election Lease has a holder that renews
// it. A Lease whose renewTime looks recent proves nothing on its own: a
// leader that crashed (SIGKILL, OOM, node loss) leaves one behind until
// it expires, and the checking pod's clock is not the leader's. So the
// check waits until it sees renewTime change (or another holder take the
// Lease over): someone is writing it now.
type leaseCheck struct {
	key types.NamespacedName
	// first is the first state read with a holder, and when.
	first   *coordinationv1.LeaseSpec
	firstAt time.Time
}

func (*leaseCheck) name() string { return "manager" }

func (l *leaseCheck) step(ctx context.Context, env *checkEnv) (bool, string, error) {
	var lease coordinationv1.Lease
	err := env.reader.Get(ctx, l.key, &lease)
	switch {
	case apierrors.IsNotFound(err):
		l.first = nil
		return false, fmt.Sprintf("Lease %s not found: no manager has become leader (is the manager Deployment running, with leader election on?)", l.key), nil
	case err != nil:
		return false, fmt.Sprintf("reading Lease %s: %v", l.key, err), finalIfDenied(err, "Lease "+l.key.String())
	}
	spec := lease.Spec
	holder := ptrString(spec.HolderIdentity)
	if holder == "" || spec.RenewTime == nil {
		l.first = nil
		return false, fmt.Sprintf("Lease %s has no holder: the last leader released it and no manager has taken over (is the manager running?)", l.key), nil
	}
	if l.first == nil {
		l.first, l.firstAt = spec.DeepCopy(), env.now()
		return false, fmt.Sprintf("Lease %s is held by %s; no renewal seen yet", l.key, holder), nil
	}
	if holder != ptrString(l.first.HolderIdentity) {
		return true, fmt.Sprintf("Lease %s taken over by %s (from %s) while watched", l.key, holder, ptrString(l.first.HolderIdentity)), nil
	}
	if !spec.RenewTime.Equal(l.first.RenewTime) {
		return true, fmt.Sprintf("Lease %s renewed by %s while watched", l.key, holder), nil
	}
	duration := "unknown"
	if spec.LeaseDurationSeconds != nil {
		duration = (time.Duration(*spec.LeaseDurationSeconds) * time.Second).String()
	}
	return false, fmt.Sprintf("Lease %s held by %s was not renewed in the %v this check watched it (last renewal at %s, lease duration %s): the manager holding it is not running",
		l.key, holder, env.now().Sub(l.firstAt).Round(100*time.Millisecond), spec.RenewTime.UTC().Format(time.RFC3339), duration), nil
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// deploymentCheck: without leader election there is no Lease to watch; the
// manager's Deployment must have observed its spec and have an available
// replica (its readiness probe passed).
type deploymentCheck struct{ key types.NamespacedName }

func (*deploymentCheck) name() string { return "manager" }

func (d *deploymentCheck) step(ctx context.Context, env *checkEnv) (bool, string, error) {
	var dep appsv1.Deployment
	err := env.reader.Get(ctx, d.key, &dep)
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("Deployment %s not found", d.key), nil
	case err != nil:
		return false, fmt.Sprintf("reading Deployment %s: %v", d.key, err), finalIfDenied(err, "Deployment "+d.key.String())
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	switch {
	case want == 0:
		return false, fmt.Sprintf("Deployment %s is scaled to 0 replicas", d.key), nil
	case dep.Status.ObservedGeneration < dep.Generation:
		return false, fmt.Sprintf("Deployment %s: generation %d not yet observed (status is for %d)", d.key, dep.Generation, dep.Status.ObservedGeneration), nil
	case dep.Status.AvailableReplicas < 1:
		return false, fmt.Sprintf("Deployment %s has 0 of %d replicas available (not ready: kubectl -n %s describe deployment %s)", d.key, want, d.key.Namespace, d.key.Name), nil
	}
	return true, fmt.Sprintf("Deployment %s has %d of %d replicas available", d.key, dep.Status.AvailableReplicas, want), nil
}

// storeCheck: a ClusterLockStore is Ready, for its current generation.
type storeCheck struct{ store string }

func (s *storeCheck) name() string { return "store" }

func (s *storeCheck) step(ctx context.Context, env *checkEnv) (bool, string, error) {
	var cs v1alpha1.ClusterLockStore
	err := env.reader.Get(ctx, client.ObjectKey{Name: s.store}, &cs)
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("ClusterLockStore %s not found", s.store), nil
	case err != nil:
		return false, fmt.Sprintf("reading ClusterLockStore %s: %v", s.store, err), finalIfDenied(err, "ClusterLockStore "+s.store)
	}
	ready := apimeta.FindStatusCondition(cs.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil {
		return false, fmt.Sprintf("ClusterLockStore %s has no Ready condition yet: the controller has not reconciled it (is the manager running?)", s.store), nil
	}
	observed := ready.ObservedGeneration
	if observed == 0 {
		observed = cs.Status.ObservedGeneration
	}
	if observed != cs.Generation {
		return false, fmt.Sprintf("ClusterLockStore %s: its Ready condition (%s) is for generation %d, its spec is at generation %d: the controller has not reconciled the current spec (is the manager running?)",
			s.store, ready.Status, observed, cs.Generation), nil
	}
	if ready.Status != metav1.ConditionTrue {
		return false, fmt.Sprintf("ClusterLockStore %s is not Ready: %s: %s", s.store, ready.Reason, ready.Message), nil
	}
	return true, fmt.Sprintf("ClusterLockStore %s is Ready (%d tenant namespaces)", s.store, cs.Status.Tenants), nil
}

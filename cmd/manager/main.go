/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command manager runs the redlease operator: the DistributedLock
// controller, with leader election on a standard Lease. It only wires flags
// to packages; the logic lives in controllers and internal/redisprobe.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/controllers"
	"github.com/redlease/redlease/internal/redisprobe"
	"github.com/redlease/redlease/internal/version"
)

// Leader election needs a Lease in the manager's namespace
// (config/rbac/leader_election_role.yaml grants it there only).

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

type flags struct {
	metricsAddr, probeAddr   string
	metricsSecure            bool
	metricsCertPath          string
	metricsCertName          string
	metricsCertKey           string
	enableHTTP2              bool
	leaderElect              bool
	leaderElectionID         string
	leaderElectionNamespace  string
	leaseDuration            time.Duration
	renewDeadline            time.Duration
	retryPeriod              time.Duration
	probeInterval            time.Duration
	probeTimeout             time.Duration
	redisTimeout             time.Duration
	redisPoolSize            int
	allowedRedisCIDRs        string
	allowInlineLocks         bool
	watchNamespaces          string
	maxConcurrentReconciles  int
	gracefulShutdownDuration time.Duration
	releaseACLFinalizers     bool
	printVersion             bool
}

func run() error {
	var f flags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, e.g. :8443 (HTTPS with --metrics-secure) or :8080; 0 disables it.")
	flag.BoolVar(&f.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server (TokenReview, SubjectAccessReview).")
	flag.StringVar(&f.metricsCertPath, "metrics-cert-path", "", "Directory holding the metrics server's certificate and key (e.g. a cert-manager Secret mounted there), reloaded when they change; empty: a self-signed certificate.")
	flag.StringVar(&f.metricsCertName, "metrics-cert-name", "tls.crt", "The certificate's file name in --metrics-cert-path.")
	flag.StringVar(&f.metricsCertKey, "metrics-cert-key", "tls.key", "The key's file name in --metrics-cert-path.")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false, "Offer HTTP/2 on the metrics endpoint. Off by default: HTTP/2's stream handling has had denial-of-service flaws (CVE-2023-44487, CVE-2023-39325); the health endpoint is plain HTTP/1.1 either way.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints; 0 disables them.")
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader on a coordination.k8s.io Lease, so that only one replica reconciles.")
	flag.StringVar(&f.leaderElectionID, "leader-election-id", "redlease-manager.redlease.io", "Name of the leader election Lease.")
	flag.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; empty: the namespace the manager runs in.")
	flag.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits before it may take over a Lease that was not renewed.")
	flag.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leadership.")
	flag.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often leader election clients retry.")
	flag.DurationVar(&f.probeInterval, "probe-interval", controllers.DefaultProbeInterval, "How often each DistributedLock's Redis is observed when healthy; unhealthy locks back off from 1s up to this.")
	flag.DurationVar(&f.probeTimeout, "probe-timeout", controllers.DefaultProbeTimeout, "Bound on one reconcile's Redis work.")
	flag.DurationVar(&f.redisTimeout, "redis-timeout", 2*time.Second, "Dial, read and write timeout of each Redis command.")
	flag.IntVar(&f.redisPoolSize, "redis-pool-size", 4, "Most connections per Redis server (per distinct credentials), shared by every DistributedLock using it.")
	flag.StringVar(&f.allowedRedisCIDRs, "allowed-redis-cidrs", "", "Comma-separated CIDRs (e.g. 10.0.0.0/8,fd00::/8) the controller may connect to; empty: any network. Checked on every address dialed, after DNS resolution, including addresses learned from Sentinel and Redis Cluster.")
	flag.BoolVar(&f.allowInlineLocks, "allow-inline-locks", true, "Serve DistributedLocks that name their own Redis servers (spec.redis). Turn it off in multi-tenant clusters, where namespace editors could otherwise point the controller anywhere: locks must then use a LockStore or ClusterLockStore.")
	flag.StringVar(&f.watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch; empty: all namespaces.")
	flag.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 4, "Objects each of the three controllers (DistributedLock, LockStore, ClusterLockStore) reconciles in parallel.")
	flag.DurationVar(&f.gracefulShutdownDuration, "graceful-shutdown-timeout", 30*time.Second, "How long to wait for running reconciles on shutdown.")
	flag.BoolVar(&f.releaseACLFinalizers, "release-acl-finalizers", false, "Remove the redlease.io/acl-users finalizer from every ClusterLockStore and exit, instead of running: for an uninstall (the chart's post-delete hook), after which nothing would remove it. The stores' tenant users stay on Redis.")
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.BoolVar(&f.printVersion, "version", false, "Print the version and exit.")
	flag.Parse()
	if f.printVersion {
		fmt.Println("manager", version.Get())
		return nil
	}
	// Before anything connects: a typo must stop the manager, not open it
	// to every network.
	egress, err := redisprobe.ParseCIDRs(f.allowedRedisCIDRs)
	if err != nil {
		return fmt.Errorf("--allowed-redis-cidrs: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	redisprobe.SetLogger(ctrl.Log.WithName("go-redis").V(1))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if f.releaseACLFinalizers {
		return releaseACLFinalizers(cfg, scheme)
	}
	metricsOpts, certWatcher, err := metricsOptions(f)
	if err != nil {
		return err
	}
	cacheOpts := cache.Options{DefaultTransform: controllers.CacheTransform()}
	if ns := splitNamespaces(f.watchNamespaces); len(ns) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range ns {
			cacheOpts.DefaultNamespaces[n] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		GracefulShutdownTimeout:       &f.gracefulShutdownDuration,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if certWatcher != nil {
		if err := mgr.Add(certWatcher); err != nil {
			return fmt.Errorf("watching the metrics certificate: %w", err)
		}
	}

	pool := redisprobe.NewPool(redisprobe.PoolOptions{
		PoolSize:    f.redisPoolSize,
		DialTimeout: f.redisTimeout,
		Timeout:     f.redisTimeout,
		Egress:      egress,
	})
	defer func() {
		if err := pool.Close(); err != nil {
			log.Error(err, "closing Redis clients")
		}
	}()
	r := controllers.NewDistributedLockReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("redlease-controller"), controllers.Options{
		ProbeInterval:       f.probeInterval,
		ProbeTimeout:        f.probeTimeout,
		Pool:                pool,
		DisallowInlineLocks: !f.allowInlineLocks,
	})
	ctx := ctrl.SetupSignalHandler()
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: f.maxConcurrentReconciles, RecoverPanic: ptr.To(true)}); err != nil {
		return fmt.Errorf("setting up the DistributedLock controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	log.Info("starting the manager", "version", version.Get().Version, "probeInterval", f.probeInterval, "watchNamespaces", f.watchNamespaces, "leaderElection", f.leaderElect, "allowedRedisCIDRs", egress.String())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// releaseACLFinalizers is --release-acl-finalizers.
func releaseACLFinalizers(cfg *rest.Config, scheme *runtime.Scheme) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctrl.SetupSignalHandler(), time.Minute)
	defer cancel()
	released, err := controllers.ReleaseACLFinalizers(ctx, c)
	for _, name := range released {
		ctrl.Log.Info("removed the ACL cleanup finalizer: the store's tenant users stay on Redis", "clusterLockStore", name)
	}
	return err
}

func splitNamespaces(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// metricsOptions is the metrics server f asks for: HTTPS with API server
// authentication and authorization when secure, a mounted certificate
// (watched for renewals) when --metrics-cert-path is set, and HTTP/1.1
// only unless --enable-http2.
func metricsOptions(f flags) (metricsserver.Options, *certwatcher.CertWatcher, error) {
	opts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.metricsSecure}
	if !f.metricsSecure {
		return opts, nil, nil
	}
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	if !f.enableHTTP2 {
		opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if f.metricsCertPath == "" {
		return opts, nil, nil
	}
	w, err := certwatcher.New(filepath.Join(f.metricsCertPath, f.metricsCertName), filepath.Join(f.metricsCertPath, f.metricsCertKey))
	if err != nil {
		return opts, nil, fmt.Errorf("--metrics-cert-path: %w", err)
	}
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = w.GetCertificate })
	return opts, w, nil
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisconn"
)

// releaseFlags are the flags of `lockctl release`.
type releaseFlags struct {
	kube     kubeFlags
	now      bool
	timeout  time.Duration
	fence    int64
	redis    string
	password string
	key      string
	by       string
}

func newReleaseCommand(stdout io.Writer) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release LOCK [--now] [--fence N] [--timeout D] | release --redis URL --key K [--now] [--by NAME]",
		Short: "Break-glass: revoke a lock's holder (or with --now force its key free)",
		Long: `Revoke the holder of a DistributedLock: its next renewal is refused (its
lease ends lost within one renew interval) and nothing is granted until the
key's current expiry has run out, so no two holders' validity overlaps.
With --now, force the key free at once after raising the fence counter above
the holder's fence: this breaks exclusion while the old holder still runs;
fenced stores refuse its writes once the next holder has written.

The request goes through the API as a LockRelease (Kubernetes RBAC and the
audit log govern it: the chart's aggregated admin role may create one, edit
may not), named after you (SelfSubjectReview); the controller acts and
records an Event on the lock. lockctl waits for the outcome and prints it.

With --redis and --key it runs the same scripts on Redis directly, for
locks outside Kubernetes. See docs/breakglass.md.`,
		Args: usage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			fenceSet := cmd.Flags().Changed("fence")
			if f.redis != "" {
				if len(args) != 0 || f.key == "" {
					return exit(ExitUsage, errors.New("--redis needs --key and no LOCK"))
				}
				return releaseDirect(ctx, stdout, f, fenceSet)
			}
			if len(args) != 1 {
				return exit(ExitUsage, errors.New("name the DistributedLock to release (or use --redis and --key)"))
			}
			return releaseKube(ctx, stdout, f, args[0], fenceSet)
		},
	}
	f.kube.register(cmd.Flags())
	cmd.Flags().BoolVar(&f.now, "now", false, "force the key free now (fence counter raised first) instead of revoking")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the controller's outcome")
	cmd.Flags().Int64Var(&f.fence, "fence", 0, "refuse unless the lock's fence is this one (the holder you looked at)")
	cmd.Flags().StringVar(&f.redis, "redis", "", "Redis URL: release --key on it directly, without Kubernetes")
	cmd.Flags().StringVar(&f.password, "password", "", "Redis password (with --redis; default: the URL's)")
	cmd.Flags().StringVar(&f.key, "key", "", "the lock key (with --redis)")
	cmd.Flags().StringVar(&f.by, "by", "", "who asks (with --redis; the tombstone names them; default: $USER)")
	return cmd
}

// releaseKube creates a LockRelease for the lock and waits for its outcome.
func releaseKube(ctx context.Context, stdout io.Writer, f releaseFlags, name string, fenceSet bool) error {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return exit(ExitUsage, err)
	}
	ns, err := f.kube.defaultNamespace()
	if err != nil {
		return exit(ExitUsage, err)
	}
	given, lockName, qualified, ok := splitNamespaced(name)
	if !ok {
		return exit(ExitUsage, fmt.Errorf("%q: want NAME or NAMESPACE/NAME of a DistributedLock", name))
	}
	if qualified {
		ns = given
	}
	name = lockName
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return exit(ExitError, err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return exit(ExitError, fmt.Errorf("learning your user name (SelfSubjectReview): %w", err))
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return exit(ExitError, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return exit(ExitError, fmt.Errorf("connecting to the API server: %w", err))
	}
	lr := &v1alpha1.LockRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
		Spec:       v1alpha1.LockReleaseSpec{LockName: name, Mode: v1alpha1.ReleaseModeRevoke, RequestedBy: review.Status.UserInfo.Username},
	}
	if f.now {
		lr.Spec.Mode = v1alpha1.ReleaseModeForce
	}
	if fenceSet {
		lr.Spec.Fence = &f.fence
	}
	if err := c.Create(ctx, lr); err != nil {
		return exit(ExitError, fmt.Errorf("creating a LockRelease for %s/%s: %w", ns, name, err))
	}
	return waitRelease(ctx, stdout, c, types.NamespacedName{Namespace: ns, Name: lr.Name})
}

// waitRelease polls the LockRelease until it is Complete, and prints it.
func waitRelease(ctx context.Context, stdout io.Writer, c client.Client, nn types.NamespacedName) error {
	for {
		var lr v1alpha1.LockRelease
		if err := c.Get(ctx, nn, &lr); err != nil {
			return exit(ExitError, fmt.Errorf("reading LockRelease %s: %w", nn, err))
		}
		cond := meta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete)
		switch {
		case cond != nil && cond.Status == metav1.ConditionTrue:
			_, _ = fmt.Fprintf(stdout, "LockRelease %s: %s\n", nn, lr.Status.Outcome)
			return nil
		case cond != nil && cond.Status == metav1.ConditionFalse:
			return exit(ExitError, fmt.Errorf("LockRelease %s: %s: %s", nn, cond.Reason, cond.Message))
		}
		select {
		case <-ctx.Done():
			why := "the controller has not acted"
			if cond != nil {
				why = cond.Message
			}
			return exit(ExitError, fmt.Errorf("LockRelease %s not complete within --timeout: %s", nn, why))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// releaseDirect revokes (or forces) --key on --redis with the protocol's
// scripts.
func releaseDirect(ctx context.Context, stdout io.Writer, f releaseFlags, fenceSet bool) error {
	conn, creds, err := redisconn.ParseURL(f.redis)
	if err != nil {
		return exit(ExitUsage, fmt.Errorf("--redis %s: %w", redacted(f.redis), err))
	}
	if creds.Password == "" {
		creds.Password = f.password
	}
	clients, err := redisconn.NewUniversal(conn, creds, redisconn.Credentials{})
	if err != nil {
		return exit(ExitUsage, fmt.Errorf("--redis %s: %w", redacted(f.redis), err))
	}
	defer redisconn.CloseAll(clients)
	if len(clients) != 1 {
		return exit(ExitUsage, errors.New("--redis: break-glass needs one Redis deployment (no Redlock)"))
	}
	by := f.by
	if by == "" {
		by = cmp.Or(os.Getenv("USER"), "lockctl")
	}
	args := protocol.BreakGlassArgs{By: by, Sharded: conn.Mode == v1alpha1.RedisModeCluster}
	if fenceSet {
		args.Fence, args.FenceSet = uint64(max(f.fence, 0)), true
	}
	run := protocol.NewCaller(protocol.FunctionsAuto).On(clients[0])
	var b protocol.BreakGlass
	if f.now {
		b, err = protocol.Force(ctx, run, f.key, args)
	} else {
		b, err = protocol.Revoke(ctx, run, f.key, args)
	}
	if err != nil {
		return exit(ExitUnavailable, err)
	}
	if !b.Done {
		return exit(ExitError, fmt.Errorf("%s: nothing changed: %s (holder %s, fence %d)", f.key, protocol.RefusedMessage(b.Refused), orUnrecognized(b.Identity), b.Fence))
	}
	if f.now {
		_, _ = fmt.Fprintf(stdout, "forced %s free: holder %s (fence %d) lost it; the fence counter was raised to %d first\n", f.key, orUnrecognized(b.Identity), b.Fence, b.Raised)
		return nil
	}
	_, _ = fmt.Fprintf(stdout, "revoked holder %s (fence %d) of %s: nothing is granted before %s (in %v)\n",
		orUnrecognized(b.Identity), b.Fence, f.key, time.Now().Add(b.TTL).UTC().Format(time.RFC3339), b.TTL.Round(time.Millisecond))
	return nil
}

func orUnrecognized(identity string) string {
	if identity == "" {
		return "(unrecognized value)"
	}
	return identity
}

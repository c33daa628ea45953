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
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/pkg/kube"
)

// getFlags are `lockctl get`'s flags: kubectl's connection flags, -o with
// kubectl's printers (k8s.io/cli-runtime/pkg/printers), and kubectl get's
// -A and --no-headers.
type getFlags struct {
	kube          kubeFlags
	output        string
	allNamespaces bool
	noHeaders     bool
}

func newGetCommand(stdout, stderr io.Writer, log *redisLog) *cobra.Command {
	f := getFlags{kube: kubeFlags{readTimeout: defaultReadTimeout}}
	cmd := &cobra.Command{
		Use:     "get [NAME...] [-n NAMESPACE | -A] [-o wide|json|yaml|name|jsonpath=...|custom-columns=...]",
		Aliases: []string{"ls"},
		Short:   "List the locks of a namespace (or all) with their holder, pod, fence, waiters, TTL left and readiness, read from Redis",
		Long: `List DistributedLocks as kubectl get does, with what Redis says of each:
the holder's identity and pod, the fence, how many wait, the TTL left, and
the Ready condition's reason. -o wide adds the permits held, the holder's
node, the store, the mode and the key.

Redis is read in one pipelined round per store (per store and namespace:
each namespace has its own credentials; Redlock: one per node, in
parallel), whatever the count of locks. Lock values never show.

-o json, yaml, name and jsonpath=... (kubectl's printers, from
k8s.io/cli-runtime) print the
DistributedLocks as the API serves them in a List, each with a "redis"
field: what lockctl read (held, holder, pod, ttl, fence, waiting.count,
permitsHeld, holders), or "error" when it could not. -o custom-columns=
takes kubectl's HEADER:JSONPATH,... on the same objects.

A lock that could not be read shows ? in the columns read from Redis, its
reason goes to stderr, and get exits 6 (Redis unreachable, not answering
or refusing), else 5 (a lock not Ready: its status names no connection
yet), else 1 — never 0 with a ? in the table. --request-timeout bounds
the whole command.`,
		Example: `  lockctl get -n jobs
  lockctl get -A -o wide
  lockctl get nightly-report -o jsonpath='{.items[0].redis.holder}'
  kubectl redlease get -A      # as a kubectl plugin`,
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd.Context(), stdout, stderr, log, names)
		},
	}
	f.kube.register(cmd.Flags())
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "output format, as kubectl get's: "+strings.Join(getFormats, ", ")+" (default: the table)")
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the locks of every namespace")
	cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "print the table without its header line")
	return cmd
}

func (f *getFlags) run(ctx context.Context, stdout, stderr io.Writer, log *redisLog, names []string) error {
	timeout, err := f.kube.requestTimeout()
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if f.allNamespaces && len(names) > 0 {
		return exit(ExitUsage, errors.New("name the locks of one namespace (-n), not of all (-A)"))
	}
	out := getOutput{format: f.output, noHeaders: f.noHeaders, all: f.allNamespaces}
	if err := out.check(); err != nil {
		return err
	}
	api, ns, err := f.client()
	if err != nil {
		return err
	}
	log.naming("the locks of " + orAll(ns))
	rows, err := listLocks(ctx, api, ns, names)
	if err != nil {
		return err
	}
	readGroups(ctx, api, groupByStore(rows))
	if err := out.print(stdout, rows); err != nil {
		return err
	}
	return unread(ctx, stderr, rows)
}

// client is the API client and the namespace listed ("" with -A).
func (f *getFlags) client() (client.Client, string, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", err
	}
	if f.allNamespaces {
		return c, "", nil
	}
	ns, err := f.kube.defaultNamespace()
	return c, ns, err
}

// listLocks lists the DistributedLocks of ns ("": all), only names when
// some are given (each must exist, as for kubectl get), sorted by
// namespace and name.
func listLocks(ctx context.Context, api client.Reader, ns string, names []string) ([]*getRow, error) {
	var l v1alpha1.DistributedLockList
	if err := api.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the DistributedLocks of %s: %w", orAll(ns), err)
	}
	var rows []*getRow
	for i := range l.Items {
		if len(names) == 0 || slices.Contains(names, l.Items[i].Name) {
			rows = append(rows, &getRow{dl: &l.Items[i]})
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(rows, func(r *getRow) bool { return r.dl.Name == name }) {
			return nil, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("distributedlocks").GroupResource(), name)
		}
	}
	slices.SortFunc(rows, func(a, b *getRow) int {
		return strings.Compare(a.dl.Namespace+"/"+a.dl.Name, b.dl.Namespace+"/"+b.dl.Name)
	})
	return rows, nil
}

func orAll(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// unread writes why each lock shown with ? could not be read, one line
// per reason naming its locks, and returns the exit code they make: 6
// when Redis failed for one, else 5 when one is not Ready, else 1.
func unread(ctx context.Context, stderr io.Writer, rows []*getRow) error {
	var reasons []string
	locks := map[string][]string{}
	code := ExitOK
	for _, r := range rows {
		if r.err == nil {
			continue
		}
		why := r.err.Error()
		if locks[why] == nil {
			reasons = append(reasons, why)
		}
		locks[why] = append(locks[why], r.dl.Namespace+"/"+r.dl.Name)
		switch c := unreadCode(ctx, r.err); {
		case code == ExitOK, c == ExitUnavailable, c == ExitNotReady && code == ExitError:
			code = c
		}
	}
	if code == ExitOK {
		return nil
	}
	for _, why := range reasons {
		printf(stderr, "lockctl: %s: could not read: %s\n", strings.Join(locks[why], ", "), strings.ReplaceAll(why, "\n", "; "))
	}
	return exit(code, nil)
}

// unreadCode is the exit code of a lock that could not be read: get waits
// for no holder, so a read its deadline cut is a server that did not
// answer.
func unreadCode(ctx context.Context, err error) int {
	switch {
	case redisFailed(err), errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return ExitUnavailable
	case errors.Is(err, kube.ErrNotReady):
		return ExitNotReady
	}
	return ExitError
}

package controllers

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// resolve finds the lock's servers: the spec's addresses, a Service's ready
// endpoints, the Sentinels' master and replicas, or a Cluster's nodes. It
// fills rd.endpoints (and rd.sentinels) or stops the round.
func (r *DistributedLockReconciler) resolve(ctx context.Context, rd *round) bool {
	rd.slot = -1
	spec := rd.store.redis
	if spec.Mode == v1alpha1.RedisModeSentinel {
		return r.resolveSentinel(ctx, rd)
	}
	addrs := spec.Addresses
	if spec.Service != nil {
		var err error
		if addrs, err = r.serviceAddresses(ctx, rd.store.refNamespace(spec.Service.Namespace), spec.Service); err != nil {
			rd.fail(v1alpha1.ReasonEndpointsUnresolved, err.Error())
			return false
		}
	}
	switch {
	case len(addrs) == 0:
		rd.fail(v1alpha1.ReasonEndpointsUnresolved, "no Redis address: set spec.redis.addresses or spec.redis.service")
		return false
	case spec.Mode == v1alpha1.RedisModeStandalone && len(addrs) != 1:
		// Two servers behind a Standalone lock would be two locks.
		rd.fail(v1alpha1.ReasonEndpointsUnresolved, fmt.Sprintf("Standalone mode needs exactly one ready endpoint behind Service %s, found %d (%s)",
			spec.Service.Name, len(addrs), listAddrs(addrs)))
		return false
	case spec.Mode == v1alpha1.RedisModeCluster:
		return r.resolveCluster(ctx, rd, addrs)
	}
	for _, a := range addrs {
		rd.endpoints = append(rd.endpoints, &endpoint{addr: a})
	}
	return true
}

// serviceAddresses returns host:port of the ready endpoints of a Service's
// EndpointSlices, for the Service port ref.Port (matched by the port's name,
// which is how EndpointSlices name their target ports).
func (r *DistributedLockReconciler) serviceAddresses(ctx context.Context, ns string, ref *v1alpha1.ServiceReference) ([]string, error) {
	nn := types.NamespacedName{Namespace: ns, Name: ref.Name}
	var svc corev1.Service
	if err := r.kube.Get(ctx, nn, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Service %s does not exist", nn)
		}
		return nil, fmt.Errorf("reading Service %s: %w", nn, err)
	}
	portName, found := "", false
	for _, p := range svc.Spec.Ports {
		if p.Port == ref.Port {
			portName, found = p.Name, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("the Service %s has no port %d", nn, ref.Port)
	}
	var list discoveryv1.EndpointSliceList
	if err := r.kube.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: ref.Name}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", nn, err)
	}
	var addrs []string
	for _, sl := range list.Items {
		port := int32(0)
		for _, p := range sl.Ports {
			if p.Port != nil && ptrString(p.Name) == portName {
				port = *p.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range sl.Endpoints {
			// Ready unset means unknown, which consumers treat as ready;
			// a terminating endpoint is never ready.
			if (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || len(ep.Addresses) == 0 {
				continue
			}
			addrs = append(addrs, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port))))
		}
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("the Service %s has no ready endpoint for port %d", nn, ref.Port)
	}
	return addrs, nil
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// resolveSentinel probes the Sentinels and asks the first that answers
// (in spec order) for the master and its replicas.
func (r *DistributedLockReconciler) resolveSentinel(ctx context.Context, rd *round) bool {
	s := rd.store.redis.Sentinel
	if s == nil {
		rd.fail(v1alpha1.ReasonEndpointsUnresolved, "Sentinel mode needs spec.redis.sentinel")
		return false
	}
	for _, a := range s.Addresses {
		rd.sentinels = append(rd.sentinels, &endpoint{addr: a, sentinel: true})
	}
	r.probeAll(ctx, rd, rd.sentinels)
	var errs []string
	var view redisprobe.SentinelView
	asked := false
	for _, sn := range rd.sentinels {
		if !sn.reachable() {
			continue
		}
		v, err := redisprobe.AskSentinel(ctx, sn.client, s.MasterName)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", sn.addr, redisprobe.StatusText(err)))
			continue
		}
		view, asked = v, true
		break
	}
	if !asked {
		if reason, msg, ok := unreachableSummary(rd.sentinels, "Sentinel"); ok {
			rd.fail(reason, msg)
		} else {
			rd.fail(v1alpha1.ReasonEndpointsUnresolved, fmt.Sprintf("no Sentinel named the master %q: %s", s.MasterName, joinList(errs)))
		}
		return false
	}
	rd.sentinelMaster = view.Master
	rd.endpoints = append(rd.endpoints, &endpoint{addr: view.Master})
	for _, a := range view.Replicas {
		rd.endpoints = append(rd.endpoints, &endpoint{addr: a})
	}
	return true
}

// resolveCluster reads the shards from the first seed that answers and
// the key's slot.
func (r *DistributedLockReconciler) resolveCluster(ctx context.Context, rd *round, seeds []string) bool {
	tlsPorts := rd.creds.servers.TLS != nil
	var seedEPs []*endpoint
	for _, a := range seeds {
		seedEPs = append(seedEPs, &endpoint{addr: a})
	}
	var errs []string
	for _, seed := range seedEPs {
		c, err := rd.client(seed.addr, false)
		if err == nil {
			var shards []redisprobe.Shard
			if shards, err = redisprobe.ClusterShards(ctx, c, tlsPorts); err == nil {
				rd.shards = shards
				if rd.key != "" {
					if slot, err := redisprobe.KeySlot(ctx, c, rd.key); err == nil {
						rd.slot = slot
					}
				}
				break
			}
		}
		seed.probed, seed.err = true, err
		errs = append(errs, fmt.Sprintf("%s: %v", seed.addr, redisprobe.StatusText(err)))
	}
	if rd.shards == nil {
		if reason, msg, ok := unreachableSummary(seedEPs, "Cluster seed"); ok {
			rd.fail(reason, msg)
		} else {
			rd.fail(v1alpha1.ReasonEndpointsUnresolved, "no Cluster seed answered CLUSTER SHARDS: "+joinList(errs))
		}
		return false
	}
	if len(rd.shards) == 0 {
		rd.fail(v1alpha1.ReasonEndpointsUnresolved, "the Cluster has no shards")
		return false
	}
	seen := map[string]bool{}
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			rd.endpoints = append(rd.endpoints, &endpoint{addr: a})
		}
	}
	for _, sh := range rd.shards {
		add(sh.Master)
	}
	for _, sh := range rd.shards {
		for _, a := range sh.Replicas {
			add(a)
		}
	}
	return true
}

// unreachableSummary returns AuthFailed or EndpointUnreachable when none of
// eps answered, with a message naming them.
func unreachableSummary(eps []*endpoint, what string) (reason, message string, ok bool) {
	var auth, down []string
	for _, e := range eps {
		switch {
		case e.reachable():
			return "", "", false
		case redisprobe.IsAuthError(e.err):
			auth = append(auth, fmt.Sprintf("%s: %s", e.addr, redisprobe.StatusText(e.err)))
		default:
			down = append(down, fmt.Sprintf("%s: %s", e.addr, redisprobe.StatusText(e.err)))
		}
	}
	if len(auth) > 0 {
		return v1alpha1.ReasonAuthFailed, fmt.Sprintf("no %s accepted the credentials: %s", what, joinList(auth)), true
	}
	return v1alpha1.ReasonEndpointUnreachable, fmt.Sprintf("no %s answered: %s", what, joinList(down)), true
}

// listAddrs joins at most five addresses for a message.
func listAddrs(addrs []string) string {
	const most = 5
	if len(addrs) <= most {
		return strings.Join(addrs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(addrs[:most], ", "), len(addrs)-most)
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
)

// provisionTenants writes the credentials Secret of every namespace with
// locks on the store (that the store admits), and under isolation ACL
// creates or refreshes each namespace's Redis user on every node and
// deletes the users of namespaces that left. Secrets of namespaces that
// left are deleted. The result is TenantsProvisioned.
func (s *StoreReconciler) provisionTenants(ctx context.Context, rd *round, so storeObject) {
	tenants, err := s.tenantNamespaces(ctx, so)
	if err != nil {
		rd.tenants = result(metav1.ConditionUnknown, v1alpha1.ReasonReconciling, err.Error())
		return
	}
	var problems []string
	reason := ""
	provisioned := int32(0)
	acl := so.spec.isolation == v1alpha1.IsolationACL
	var nodes []*endpoint
	if acl {
		nodes, problems = aclNodes(rd)
		if len(problems) > 0 {
			reason = v1alpha1.ReasonEndpointUnreachable
		}
	}
	for _, ns := range tenants {
		var perr error
		if acl {
			perr = s.provisionACLTenant(ctx, rd, so, ns, nodes)
		} else {
			perr = s.provisionSharedTenant(ctx, rd, ns)
		}
		if perr != nil {
			if reason == "" || errors.Is(perr, redisacl.ErrACLUnavailable) {
				reason = tenantFailureReason(perr)
			}
			problems = append(problems, fmt.Sprintf("%s: %v", ns.name, errorText(perr)))
			continue
		}
		provisioned++
	}
	if acl {
		keep := map[string]bool{}
		for _, ns := range tenants {
			keep[protocol.TenantUsername(string(so.spec.uid), ns.name)] = true
		}
		for _, e := range s.pruneUsers(ctx, rd, keep) {
			if reason == "" || errors.Is(e, redisacl.ErrACLUnavailable) {
				reason = tenantFailureReason(e)
			}
			problems = append(problems, errorText(e))
		}
	}
	if err := s.deleteStaleSecrets(ctx, so.spec, tenants); err != nil {
		problems = append(problems, err.Error())
	}
	rd.tenantCount = provisioned
	switch {
	case len(problems) > 0 && reason == v1alpha1.ReasonACLUnavailable:
		rd.tenants = result(metav1.ConditionFalse, reason,
			fmt.Sprintf("%d of %d namespace(s) provisioned: %s; %s", provisioned, len(tenants), joinList(problems), aclWhatToDo))
	case len(problems) > 0:
		rd.tenants = result(metav1.ConditionFalse, firstNonEmpty(reason, v1alpha1.ReasonCredentialsNotProvisioned),
			fmt.Sprintf("%d of %d namespace(s) provisioned: %s", provisioned, len(tenants), joinList(problems)))
	case acl:
		msg := fmt.Sprintf("%d namespace(s) provisioned, each with its own Redis user on %d node(s)", provisioned, len(nodes))
		if rd.tenantLua != "" {
			msg += "; " + rd.tenantLua
		}
		rd.tenants = result(metav1.ConditionTrue, v1alpha1.ReasonTenantsProvisioned, msg)
	default:
		rd.tenants = result(metav1.ConditionTrue, v1alpha1.ReasonTenantsProvisioned, fmt.Sprintf("%d namespace(s) provisioned", provisioned))
	}
}

// annotationQuarantineRights on a tenant's credentials Secret (isolation
// ACL) says whether its Redis user may run INFO server and replication,
// which the failover quarantine's scripts read: "true" once it may on
// every node (the Secret is written after the users), "false" otherwise.
// A lock under the quarantine waits for "true" to become Ready, so that
// its pods do not start before their user may run the scripts.
const annotationQuarantineRights = "redlease.io/failover-quarantine"

// aclWhatToDo is what a user can do about ACLs the server refuses: on a
// managed service, which forbids ACL, only the second.
const aclWhatToDo = "grant the controllerAuth user ACL SETUSER, ACL DELUSER and ACL USERS (lockctl controller-user prints the line), or use a ClusterLockStore with tenants.isolation: None, whose namespaces share clientAuth (isolation is immutable: a new store)"

func tenantFailureReason(err error) string {
	if errors.Is(err, redisacl.ErrACLUnavailable) {
		return v1alpha1.ReasonACLUnavailable
	}
	return v1alpha1.ReasonCredentialsNotProvisioned
}

// tenant is a namespace with locks on a store.
type tenant struct {
	name string
	// longestTTL of its locks on the store: an old password stays valid
	// for twice that after a rotation.
	longestTTL time.Duration
	// quarantine is true when one of its locks on the store uses the
	// failover quarantine, whose scripts read INFO server and
	// replication: only such a namespace's Redis user may.
	quarantine bool
	// secrets are the names of the credentials Secrets its locks on the
	// store read (podrbac.LockSecretName), sorted: each holds the same
	// credentials, those of the namespace's one user.
	secrets []string
}

// tenantNamespaces are the namespaces with locks on the store that the
// store admits (a LockStore: its own namespace; a ClusterLockStore: those
// its namespaceSelector selects), sorted.
func (s *StoreReconciler) tenantNamespaces(ctx context.Context, so storeObject) ([]tenant, error) {
	var locks v1alpha1.DistributedLockList
	opts := []client.ListOption{client.MatchingFields{indexStore: string(s.kind) + "/" + so.spec.name}}
	if so.spec.namespace != "" {
		opts = append(opts, client.InNamespace(so.spec.namespace))
	}
	if err := s.kube.List(ctx, &locks, opts...); err != nil {
		return nil, fmt.Errorf("listing the locks on %s: %w", so.spec.requester(), err)
	}
	ttl := map[string]time.Duration{}
	quarantine := map[string]bool{}
	secrets := map[string][]string{}
	for i := range locks.Items {
		dl := &locks.Items[i]
		ttl[dl.Namespace] = max(ttl[dl.Namespace], dl.Spec.TTLOrDefault())
		quarantine[dl.Namespace] = quarantine[dl.Namespace] || dl.Spec.FailoverQuarantine()
		if name := podrbac.LockSecretName(dl); !slices.Contains(secrets[dl.Namespace], name) {
			secrets[dl.Namespace] = append(secrets[dl.Namespace], name)
		}
	}
	var out []tenant
	for ns, t := range ttl {
		if so.tenants != nil {
			ok, err := s.namespaceAllowed(ctx, so.tenants, ns)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		slices.Sort(secrets[ns])
		out = append(out, tenant{name: ns, longestTTL: t, quarantine: quarantine[ns], secrets: secrets[ns]})
	}
	slices.SortFunc(out, func(a, b tenant) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// namespaceAllowed reports whether the store's namespaceSelector selects
// namespace ns (an absent selector selects none).
func (r *DistributedLockReconciler) namespaceAllowed(ctx context.Context, t *v1alpha1.TenantsSpec, ns string) (bool, error) {
	if t.NamespaceSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("the store's tenants.namespaceSelector is invalid: %w", err)
	}
	var n corev1.Namespace
	if err := r.kube.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil {
		return false, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return sel.Matches(labels.Set(n.Labels)), nil
}

// provisionSharedTenant writes the store's clientAuth into the namespace
// (LockStores, and ClusterLockStores with isolation None).
func (s *StoreReconciler) provisionSharedTenant(ctx context.Context, rd *round, t tenant) error {
	data, err := s.podCredentials(ctx, rd.store, rd.store.clientAuth)
	if err != nil {
		return err
	}
	return s.writeTenantSecrets(ctx, rd.store, t, data, nil)
}

// writeTenantSecrets writes the same credentials under every name the
// tenant's locks read. A name whose Secret is not the store's is skipped:
// the locks that name it report CredentialsSecretConflict, and the store
// does not fail for a tenant's choice.
func (s *StoreReconciler) writeTenantSecrets(ctx context.Context, st *storeSpec, t tenant, data map[string][]byte, annotations map[string]string) error {
	for _, name := range t.secrets {
		err := s.writeCredentials(ctx, st, t.name, name, data, annotations)
		if _, conflict := errors.AsType[*secretConflictError](err); err != nil && !conflict {
			return err
		}
	}
	return nil
}

// aclNodes are the data servers a tenant user must exist on (masters and
// replicas alike: ACLs do not replicate, and a replica can be promoted),
// and the ones that did not answer.
func aclNodes(rd *round) (nodes []*endpoint, down []string) {
	for _, e := range rd.endpoints {
		if e.reachable() {
			nodes = append(nodes, e)
		} else {
			down = append(down, fmt.Sprintf("%s did not answer: its tenant users are not provisioned", e.addr))
		}
	}
	return nodes, down
}

// provisionACLTenant gives namespace t its Redis user on every node and
// writes its credentials Secret. The password lives in that Secret; a
// rotation request (redlease.io/rotate on the store or on the Secret)
// makes a new one, and the old one stays accepted for twice the longest
// TTL of the namespace's locks, so held leases renew across it.
func (s *StoreReconciler) provisionACLTenant(ctx context.Context, rd *round, so storeObject, t tenant, nodes []*endpoint) error {
	ns := t.name
	if len(nodes) == 0 {
		return errors.New("no node answered")
	}
	prev, err := s.tenantSecrets(ctx, so.spec, t)
	if err != nil {
		return err
	}
	rk := rotationKey{store: so.spec.uid, namespace: ns}
	pw := rotation(prev, s.rotations.get(rk), so.obj.GetAnnotations()[v1alpha1.AnnotationRotate], rd.now, max(2*t.longestTTL, minRotationGrace))
	opts := protocol.ACLOptions{DB: int(so.spec.redis.DB), Cluster: so.spec.redis.Mode == v1alpha1.RedisModeCluster, Quarantine: t.quarantine}
	if opts, err = redisacl.DetectOptions(ctx, nodes[0].client, opts); err != nil {
		return err
	}
	// FunctionsOnly where every master serves functions: where one has
	// none, or refuses FUNCTION to the controller, tenants keep scripts
	// (FunctionsLoaded says so). A load that failed for a passing reason
	// keeps it: the tenants wait for the next probe's load rather than
	// regain EVAL.
	opts.FunctionsOnly = so.tenants.ScriptsOrDefault() == v1alpha1.TenantScriptsFunctionsOnly && opts.Functions && !rd.functionsRefused
	rd.tenantLua = luaRights(opts)
	rules, err := protocol.TenantACLRules(ns, opts)
	if err != nil {
		return err
	}
	user := protocol.TenantUsername(string(so.spec.uid), ns)
	for _, e := range nodes {
		if err := redisacl.Provision(ctx, e.client, user, rules, pw.passwords); err != nil {
			return err
		}
	}
	data, err := s.sharedCredentials(ctx, so.spec)
	if err != nil {
		return err
	}
	data[v1alpha1.CredentialsUsername] = []byte(user)
	data[v1alpha1.CredentialsPassword] = []byte(pw.passwords.Current)
	annotations := pw.annotations()
	annotations[annotationQuarantineRights] = strconv.FormatBool(t.quarantine)
	if err := s.writeTenantSecrets(ctx, so.spec, t, data, annotations); err != nil {
		return err
	}
	s.rotations.put(rk, pw.record)
	return nil
}

// luaRights says what Lua tenant users with opts may run.
func luaRights(opts protocol.ACLOptions) string {
	switch {
	case opts.FunctionsOnly:
		return "they run only the " + protocol.LibraryName + " functions (FCALL), no Lua of their own"
	case opts.Functions:
		return "they may run scripts (EVAL, EVALSHA) and the library's functions (FCALL)"
	}
	return "they may run scripts (EVAL, EVALSHA): the servers have no functions"
}

// existingSecret is what a tenant's Secret holds now (zero when missing).
type existingSecret struct {
	data        map[string][]byte
	annotations map[string]string
}

// tenantSecrets is what the tenant's credentials Secrets hold now, read
// uncached: those the store wrote, never another's (its password would
// become the tenant user's). The data and the controller's annotations
// come from the first with a password (they are copies: a tenant who
// edits one only decides which password the next write copies), the
// rotate requests from all of them, so that a request on any one
// rotates the namespace's user.
func (s *StoreReconciler) tenantSecrets(ctx context.Context, st *storeSpec, t tenant) (existingSecret, error) {
	out := existingSecret{annotations: map[string]string{}}
	var requests []string
	for _, name := range t.secrets {
		nn := types.NamespacedName{Namespace: t.name, Name: name}
		var sec corev1.Secret
		if err := s.apiReader.Get(ctx, nn, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return existingSecret{}, fmt.Errorf("reading the credentials Secret %s: %w", nn, err)
		}
		if sec.Labels[v1alpha1.LabelStoreUID] != string(st.uid) {
			continue
		}
		if out.data == nil && len(sec.Data[v1alpha1.CredentialsPassword]) > 0 {
			out.data = sec.Data
			out.annotations[annotationRotated] = sec.Annotations[annotationRotated]
		}
		if r := sec.Annotations[v1alpha1.AnnotationRotate]; r != "" && !slices.Contains(requests, r) {
			requests = append(requests, r)
		}
	}
	out.annotations[v1alpha1.AnnotationRotate] = strings.Join(requests, ",")
	return out, nil
}

// pruneUsers deletes, on every node that answers, the users with the
// store's prefix that keep does not name (nil keep: all of them).
func (s *StoreReconciler) pruneUsers(ctx context.Context, rd *round, keep map[string]bool) []error {
	prefix := protocol.TenantUserPrefix(string(rd.store.uid))
	var errs []error
	for _, e := range rd.endpoints {
		if !e.reachable() {
			continue
		}
		if _, err := redisacl.Prune(ctx, e.client, prefix, keep); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// deleteStaleSecrets deletes the credentials Secrets the store wrote in
// namespaces that are no longer its tenants, and those under a name no
// lock of the namespace reads any more (a lock deleted or renaming its
// spec.credentialsSecretName, or an older derivation).
func (s *StoreReconciler) deleteStaleSecrets(ctx context.Context, st *storeSpec, tenants []tenant) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	opts := []client.ListOption{client.MatchingLabels{v1alpha1.LabelStoreUID: string(st.uid)}}
	if st.namespace != "" {
		opts = append(opts, client.InNamespace(st.namespace))
	}
	if err := s.kube.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("listing the credentials Secrets of %s: %w", st.requester(), err)
	}
	var errs []error
	for i := range list.Items {
		m := &list.Items[i]
		if slices.ContainsFunc(tenants, func(t tenant) bool { return t.name == m.Namespace && slices.Contains(t.secrets, m.Name) }) {
			continue
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if err := s.kube.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the credentials Secret %s/%s: %w", m.Namespace, m.Name, err))
		}
	}
	return errors.Join(errs...)
}

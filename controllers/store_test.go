/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// This file holds the helpers of the store tests (LockStore,
// ClusterLockStore and their tenants) and the tests of the LockStore's
// clientAuth and of a ClusterLockStore on Redis Cluster.

// harnessLabel marks the ClusterLockStores of one test: each harness's
// manager caches only those labelled with its own namespace.
const harnessLabel = "redlease.io/test-harness"

// tenantLabel is the namespace label the tests' ClusterLockStores select.
const tenantLabel = "redlease.io/locks"

// tenantSelector selects the namespaces labelled tenantLabel=true.
func tenantSelector() *v1alpha1.TenantsSpec {
	return &v1alpha1.TenantsSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tenantLabel: "true"}},
		Isolation:         v1alpha1.IsolationACL,
	}
}

// createClusterStore creates a ClusterLockStore named name plus the test
// namespace (cluster-scoped names are shared by every test), labelled for
// this harness's manager. When the test ends it is deleted while the
// manager still runs, so that its finalizer is honoured.
func (h *harness) createClusterStore(name string, spec v1alpha1.ClusterLockStoreSpec) *v1alpha1.ClusterLockStore {
	h.t.Helper()
	cs := &v1alpha1.ClusterLockStore{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + h.ns, Labels: map[string]string{harnessLabel: h.ns}},
		Spec:       spec,
	}
	if err := h.c.Create(h.ctx(), cs); err != nil {
		h.t.Fatalf("creating ClusterLockStore %s: %v", cs.Name, err)
	}
	h.t.Cleanup(func() { h.deleteClusterStoreAtEnd(cs.Name) })
	return cs
}

// deleteClusterStoreAtEnd deletes a test's ClusterLockStore and waits a
// little for the controller's finalizer; a store still there then (its
// servers already stopped) loses the finalizer so that it does not linger.
func (h *harness) deleteClusterStoreAtEnd(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs := &v1alpha1.ClusterLockStore{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := h.c.Delete(ctx, cs); err != nil {
		return // gone already, or nothing more to do
	}
	for ctx.Err() == nil {
		if err := h.c.Get(ctx, types.NamespacedName{Name: name}, cs); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := h.c.Get(context.Background(), types.NamespacedName{Name: name}, cs); err == nil {
		patch := client.MergeFrom(cs.DeepCopy())
		controllerutil.RemoveFinalizer(cs, aclFinalizer)
		_ = h.c.Patch(context.Background(), cs, patch)
	}
}

// createIn creates a DistributedLock name in namespace ns.
func (h *harness) createIn(ns, name string, spec v1alpha1.DistributedLockSpec) *v1alpha1.DistributedLock {
	h.t.Helper()
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := h.c.Create(h.ctx(), dl); err != nil {
		h.t.Fatalf("creating DistributedLock %s/%s: %v", ns, name, err)
	}
	return dl
}

// onStore is the spec of a lock on a store.
func onStore(kind v1alpha1.StoreKind, store, key string) v1alpha1.DistributedLockSpec {
	return v1alpha1.DistributedLockSpec{Key: key, StoreRef: &v1alpha1.StoreReference{Kind: kind, Name: store}}
}

// labelNamespace sets (value != "") or removes a label of namespace ns.
func (h *harness) labelNamespace(ns, label, value string) {
	h.t.Helper()
	var n corev1.Namespace
	if err := h.c.Get(h.ctx(), types.NamespacedName{Name: ns}, &n); err != nil {
		h.t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if value == "" {
		delete(n.Labels, label)
	} else {
		n.Labels[label] = value
	}
	if err := h.c.Patch(h.ctx(), &n, patch); err != nil {
		h.t.Fatalf("labelling namespace %s: %v", ns, err)
	}
}

// storeStatus is the status and generation of a LockStore or
// ClusterLockStore.
func storeStatus(obj client.Object) (*v1alpha1.LockStoreStatus, int64) {
	switch s := obj.(type) {
	case *v1alpha1.ClusterLockStore:
		return &s.Status, s.Generation
	case *v1alpha1.LockStore:
		return &s.Status, s.Generation
	}
	panic(fmt.Sprintf("not a store: %T", obj))
}

// waitStore polls the store obj (a *LockStore or *ClusterLockStore whose
// name, and namespace for a LockStore, are set) until cond returns nil.
// obj holds the last version read.
func (h *harness) waitStore(obj client.Object, what string, cond func(st *v1alpha1.LockStoreStatus, generation int64) error) {
	h.t.Helper()
	nn := client.ObjectKeyFromObject(obj)
	deadline := time.Now().Add(waitTimeout)
	for {
		err := h.c.Get(h.ctx(), nn, obj)
		if err == nil {
			if err = cond(storeStatus(obj)); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			st, _ := storeStatus(obj)
			y, _ := yaml.Marshal(st)
			h.t.Fatalf("%T %s: %s: not within %v: %v\nstatus:\n%s", obj, nn, what, waitTimeout, err, y)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storeCondition checks a store condition like hasCondition does a lock's.
func storeCondition(st *v1alpha1.LockStoreStatus, generation int64, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(st.Conditions, typ)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition", typ)
	case c.Status != status || (reason != "" && c.Reason != reason):
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	case c.ObservedGeneration != generation:
		return fmt.Errorf("%s describes generation %d, want %d", typ, c.ObservedGeneration, generation)
	}
	return nil
}

// storeReady is a store's Ready True.
func storeReady(st *v1alpha1.LockStoreStatus, generation int64) error {
	return storeCondition(st, generation, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
}

// storeProvisioned is Ready, and TenantsProvisioned True for n namespaces.
func storeProvisioned(n int32) func(st *v1alpha1.LockStoreStatus, generation int64) error {
	return func(st *v1alpha1.LockStoreStatus, generation int64) error {
		if err := storeReady(st, generation); err != nil {
			return err
		}
		if err := storeCondition(st, generation, v1alpha1.ConditionTenantsProvisioned, metav1.ConditionTrue, v1alpha1.ReasonTenantsProvisioned); err != nil {
			return err
		}
		if st.Tenants != n {
			return fmt.Errorf("status.tenants %d, want %d", st.Tenants, n)
		}
		return nil
	}
}

// readyOn is a lock on a store that is Ready with what its pods need:
// status.key, the connection and the credentials Secret ref.
func readyOn(key string, mode v1alpha1.RedisMode, secret string) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		if err := hasCondition(dl, v1alpha1.ConditionStoreReady, metav1.ConditionTrue, v1alpha1.ReasonStoreReady); err != nil {
			return err
		}
		st := dl.Status
		switch {
		case st.Key != key:
			return fmt.Errorf("status.key %q, want %q", st.Key, key)
		case st.Connection == nil || st.Connection.Mode != mode || len(st.Connection.Addresses) == 0:
			return fmt.Errorf("status.connection %+v, want mode %s with addresses", st.Connection, mode)
		case st.CredentialsSecretRef == nil || st.CredentialsSecretRef.Name != secret:
			return fmt.Errorf("status.credentialsSecretRef %+v, want %s", st.CredentialsSecretRef, secret)
		}
		return nil
	}
}

// notReadyBecause is Ready False for reason.
func notReadyBecause(reason string) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, reason)
	}
}

// secretData reads Secret ns/name from the API server (nil when missing;
// an empty map for a Secret without data, such as the credentials of a
// store whose servers need no AUTH).
func (h *harness) secretData(ns, name string) (map[string][]byte, error) {
	var s corev1.Secret
	if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if s.Data == nil {
		return map[string][]byte{}, nil
	}
	return s.Data, nil
}

// podClient connects as a pod of the lock's namespace does: from the
// lock's status.connection and the Secret its status names, through
// redisconn, with nothing else. The client is closed when the test ends.
func (h *harness) podClient(dl *v1alpha1.DistributedLock, opts ...redisconn.Option) redis.UniversalClient {
	h.t.Helper()
	clients := h.podClients(dl, opts...)
	if len(clients) != 1 {
		h.t.Fatalf("%d clients for a %s lock, want 1", len(clients), dl.Status.Connection.Mode)
	}
	return clients[0]
}

func (h *harness) podClients(dl *v1alpha1.DistributedLock, opts ...redisconn.Option) []redis.UniversalClient {
	h.t.Helper()
	conn, ref := dl.Status.Connection, dl.Status.CredentialsSecretRef
	if conn == nil || ref == nil {
		h.t.Fatalf("%s/%s publishes no connection or credentials Secret: %+v", dl.Namespace, dl.Name, dl.Status)
	}
	data, err := h.secretData(dl.Namespace, ref.Name)
	if err != nil || data == nil {
		h.t.Fatalf("reading the credentials Secret %s/%s: %v (found: %t)", dl.Namespace, ref.Name, err, data != nil)
	}
	tlsOn, serverName, insecure := conn.TLS != nil, "", false
	if conn.TLS != nil {
		serverName, insecure = conn.TLS.ServerName, conn.TLS.InsecureSkipVerify
	}
	servers, sentinels, err := redisconn.FromSecret(data, tlsOn, serverName, insecure)
	if err != nil {
		h.t.Fatal(err)
	}
	clients, err := redisconn.NewUniversal(*conn, servers, sentinels, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { redisconn.CloseAll(clients) })
	return clients
}

// userClient connects to addr as user with password, directly (a client
// that does not go through the controller's publications).
func userClient(t testing.TB, s *redistest.Server, user, password string) *redis.Client {
	return s.Client(t, func(o *redis.Options) { o.Username, o.Password = user, password })
}

// aclUsers is ACL USERS of a server, sorted.
func aclUsers(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	users, err := c.Do(ctx, "acl", "users").StringSlice()
	slices.Sort(users)
	return users, err
}

// isNoPerm reports whether err is Redis's NOPERM refusal.
func isNoPerm(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "NOPERM")
}

// eventsRegarding lists the Events in namespace ns regarding the object
// kind/name (Events of a cluster-scoped object are in "default").
func (h *harness) eventsRegarding(ns, kind, name string) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.ctx(), &list, client.InNamespace(ns)); err != nil {
		h.t.Fatalf("listing Events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Regarding.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// mentions returns the words of forbidden that v (marshalled to JSON)
// contains.
func mentions(v any, forbidden ...string) []string {
	raw, err := json.Marshal(v)
	if err != nil {
		return []string{err.Error()}
	}
	var found []string
	for _, f := range forbidden {
		if strings.Contains(string(raw), f) {
			found = append(found, f)
		}
	}
	return found
}

// TestLockStoreClientAuth: a LockStore's pods get its clientAuth, not the
// controller's credentials: the Secret "redlease-lockstore-<name>" in the
// store's namespace holds the clientAuth user and password, the lock on the
// store is Ready and publishes it, and a pod connecting with it takes the
// lock (as that user: the controller's password is nowhere in the Secret).
func TestLockStoreClientAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	const adminPass, appPass = "admin-s3cret", "app-s3cret"
	srv := redistest.StartStandalone(t, redistest.WithPassword(adminPass))
	ctx := h.ctx()
	// The pods' user may run only what a lock needs, on keys under "app/".
	if err := srv.Client(t).Do(ctx, "acl", "setuser", "app", "on", ">"+appPass, "~app/*", "~{app/*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	h.createSecret("redis-admin", map[string]string{"password": adminPass})
	h.createSecret("redis-app", map[string]string{"password": appPass})
	ls := &v1alpha1.LockStore{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "team"},
		Spec: v1alpha1.LockStoreSpec{
			Redis:          v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{srv.Addr()}},
			ControllerAuth: &v1alpha1.RedisAuth{PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "redis-admin", Key: "password"}},
			ClientAuth:     &v1alpha1.RedisAuth{Username: "app", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "redis-app", Key: "password"}},
		},
	}
	if err := h.c.Create(ctx, ls); err != nil {
		t.Fatal(err)
	}
	h.create("nightly", onStore(v1alpha1.StoreKindLockStore, "team", "app/nightly"))

	h.waitStore(ls, "Ready with its namespace provisioned", storeProvisioned(1))
	h.eventually("the store's Ready condition as a series (redlease_lockstore_condition)", func() error {
		if s := conditionSeries(t, lockStoreConditions, client.ObjectKeyFromObject(ls)); s[v1alpha1.ConditionReady].status != "True" {
			return fmt.Errorf("series %v", s)
		}
		return nil
	})
	dl := h.waitFor("nightly", "Ready on the LockStore", readyOn("app/nightly", v1alpha1.RedisModeStandalone, "redlease-lockstore-team"))
	if got := dl.Status.Connection.Addresses; !slices.Equal(got, []string{srv.Addr()}) {
		t.Errorf("status.connection.addresses %v, want [%s]", got, srv.Addr())
	}
	data, err := h.secretData(h.ns, "redlease-lockstore-team")
	if err != nil {
		t.Fatal(err)
	}
	if u, p := string(data[v1alpha1.CredentialsUsername]), string(data[v1alpha1.CredentialsPassword]); u != "app" || p != appPass {
		t.Errorf("the credentials Secret holds user %q password %q, want the clientAuth's app/%s", u, p, appPass)
	}
	for k, v := range data {
		if strings.Contains(string(v), adminPass) {
			t.Errorf("the credentials Secret's key %q holds the controller's password", k)
		}
	}

	c := h.podClient(dl)
	// The pod is the clientAuth user, not the default user with the
	// controller's password.
	if who, err := c.Do(ctx, "acl", "whoami").Text(); err != nil || who != "app" {
		t.Errorf("ACL WHOAMI as the pod: %q, %v; want app", who, err)
	}
	if err := c.ConfigGet(ctx, "maxmemory").Err(); !isNoPerm(err) {
		t.Errorf("CONFIG GET as the pod: %v, want NOPERM (app has no @dangerous commands)", err)
	}
	locker := newLocker(t, c, lock.WithIdentity("nightly-pod"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(ctx, dl.Status.Key)
	if err != nil {
		t.Fatalf("acquiring %s with the Secret's credentials: %v", dl.Status.Key, err)
	}
	releaseAtEnd(t, lease)
	h.waitFor("nightly", "the holder observed", holderIs("nightly-pod", lease.Fence()))
}

// TestClusterLockStoreOnCluster: a ClusterLockStore on a Redis Cluster
// lists every master with the slots it serves in status.endpoints, and a
// lock on it names as status.master the master whose slots hold its
// effective key's slot (as the servers compute it: CLUSTER KEYSLOT); a pod
// of the namespace takes the lock through a cluster client with its
// tenant user, on that master. Every master serves the function library
// (the controller loaded it on each; FUNCTION LIST on each says so).
func TestClusterLockStoreOnCluster(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	started := time.Now()
	cl := redistest.StartCluster(t)
	t.Logf("the cluster formed in %v", time.Since(started).Round(time.Millisecond))
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	cs := h.createClusterStore("cluster", v1alpha1.ClusterLockStoreSpec{
		Redis:   v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeCluster, Addresses: []string{cl.Masters[0].Addr()}},
		Tenants: tenantSelector(),
	})
	h.createIn(ns, "reindex", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "reindex"))

	h.waitStore(cs, "Ready with its tenant", storeProvisioned(1))
	h.waitStore(cs, "the library on every master", librariesLoaded)
	for _, m := range cl.Masters {
		if err := serves(h.ctx(), m.Client(t)); err != nil {
			t.Error(err)
		}
	}
	masters := map[string]string{} // address → slots
	for _, e := range cs.Status.Endpoints {
		if e.Role == v1alpha1.EndpointRoleMaster {
			masters[e.Address] = e.Slots
		}
	}
	for _, m := range cl.Masters {
		if masters[m.Addr()] == "" {
			t.Errorf("master %s is not in status.endpoints with its slots: %v", m.Addr(), masters)
		}
	}

	key := ns + "/reindex"
	dl := h.waitForIn(ns, "reindex", "Ready on the cluster store", readyOn(key, v1alpha1.RedisModeCluster, "redlease-"+cs.Name))
	ctx := h.ctx()
	slot, err := cl.Masters[0].Client(t).ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var owner string
	for addr, slots := range masters {
		if slotsContain(slots, int(slot)) {
			owner = addr
		}
	}
	if owner == "" || dl.Status.Master != owner {
		t.Errorf("status.master %q; the key's slot %d is in the slots of %q (%v)", dl.Status.Master, slot, owner, masters)
	}

	c := h.podClient(dl)
	locker := newLocker(t, c, lock.WithIdentity("reindexer"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("acquiring %s as the tenant on the cluster: %v", key, err)
	}
	releaseAtEnd(t, lease)
	h.waitForIn(ns, "reindex", "the holder observed on the slot's master", holderIs("reindexer", lease.Fence()))
	i := slices.IndexFunc(cl.Masters, func(s *redistest.Server) bool { return s.Addr() == dl.Status.Master })
	if i < 0 {
		t.Fatalf("status.master %s is no master", dl.Status.Master)
	}
	if n, err := cl.Masters[i].Client(t).Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Errorf("status.master %s does not hold the key: EXISTS %d, %v", dl.Status.Master, n, err)
	}
}

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
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The tests of a ClusterLockStore's tenants under isolation ACL, each
// against a real redis-server whose default user (the controller's, here)
// may run ACL: every namespace gets its own Redis user, confined to its
// own keys; namespaces come and go with their locks and labels; passwords
// rotate without breaking held leases; the store's deletion removes the
// users.

// aclStandaloneStore is a ClusterLockStore on one standalone server that
// admits namespaces labelled tenantLabel=true, with isolation ACL.
func aclStandaloneStore(addr string) v1alpha1.ClusterLockStoreSpec {
	return v1alpha1.ClusterLockStoreSpec{
		Redis:   v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}},
		Tenants: tenantSelector(),
	}
}

// tenantUser is the ACL user the store with uid gives namespace ns, as
// DESIGN §10.1 spells it (not through the code that computes it).
func tenantUser(uid types.UID, ns string) string {
	return "redlease-" + string(uid)[:8] + "-" + ns
}

// TestClusterLockStoreACLIsolation: two labelled namespaces with a lock
// "job" each on one ClusterLockStore. The store is Ready with both tenants
// provisioned; each lock is Ready with status.key "<ns>/job", the
// connection and its namespace's credentials Secret (its own user and a
// password). A pod of namespace A, connecting only with what A's lock and
// Secret publish, takes, renews and releases "<A>/job", and is refused
// (NOPERM) everything of namespace B (its lock key, fence counter and
// events channel) and everything a lock does not need (CONFIG, FLUSHALL,
// KEYS, SCRIPT FLUSH). The server has exactly the two tenant users besides
// default.
func TestClusterLockStoreACLIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 2})
	srv := redistest.StartStandalone(t)
	nsA, nsB := h.extra[0], h.extra[1]
	for _, ns := range h.extra {
		h.labelNamespace(ns, tenantLabel, "true")
	}
	cs := h.createClusterStore("shared", aclStandaloneStore(srv.Addr()))
	for _, ns := range h.extra {
		h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	}

	h.waitStore(cs, "Ready with two tenants", storeProvisioned(2))
	if !controllerutil.ContainsFinalizer(cs, aclFinalizer) {
		t.Errorf("the store has no %s finalizer: its tenant users would outlive it", aclFinalizer)
	}
	secret := "redlease-" + cs.Name
	locks := map[string]*v1alpha1.DistributedLock{}
	for _, ns := range h.extra {
		dl := h.waitForIn(ns, "job", "Ready with its connection and Secret", readyOn(ns+"/job", v1alpha1.RedisModeStandalone, secret))
		if got := dl.Status.Connection.Addresses; !slices.Equal(got, []string{srv.Addr()}) {
			t.Errorf("%s: status.connection.addresses %v, want [%s]", ns, got, srv.Addr())
		}
		data, err := h.secretData(ns, secret)
		if err != nil || data == nil {
			t.Fatalf("%s: credentials Secret %s: %v (found %t)", ns, secret, err, data != nil)
		}
		if u := string(data[v1alpha1.CredentialsUsername]); u != tenantUser(cs.UID, ns) {
			t.Errorf("%s: the Secret's username %q, want %q", ns, u, tenantUser(cs.UID, ns))
		}
		if len(data[v1alpha1.CredentialsPassword]) < 16 {
			t.Errorf("%s: the Secret's password is %d bytes long, want a generated one", ns, len(data[v1alpha1.CredentialsPassword]))
		}
		locks[ns] = dl
	}

	ctx := h.ctx()
	users, err := aclUsers(ctx, srv.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"default", tenantUser(cs.UID, nsA), tenantUser(cs.UID, nsB)}
	slices.Sort(want)
	if !slices.Equal(users, want) {
		t.Errorf("ACL USERS %v, want %v", users, want)
	}

	// A pod of namespace A.
	c := h.podClient(locks[nsA])
	locker := newLocker(t, c, lock.WithIdentity("a-pod"), lock.WithTTL(10*time.Second))
	own := nsA + "/job"
	lease, err := locker.TryAcquire(ctx, own)
	if err != nil {
		t.Fatalf("acquiring %s as namespace A: %v", own, err)
	}
	if err := lease.Renew(ctx); err != nil {
		t.Errorf("renewing %s: %v", own, err)
	}
	// The controller reads the holder with its own credentials.
	h.waitForIn(nsA, "job", "the holder observed", holderIs("a-pod", lease.Fence()))
	if err := lease.Release(ctx); err != nil {
		t.Errorf("releasing %s: %v", own, err)
	}

	other := nsB + "/job"
	refused := []struct {
		what string
		run  func(context.Context) error
	}{
		{"acquiring " + other, func(ctx context.Context) error {
			lease, err := locker.TryAcquire(ctx, other)
			if err == nil {
				_ = lease.Release(ctx)
			}
			return err
		}},
		{"INCR {" + other + "}:fence", func(ctx context.Context) error {
			return c.Incr(ctx, "{"+other+"}:fence").Err()
		}},
		{"SUBSCRIBE {" + other + "}:events", func(ctx context.Context) error {
			ps := c.Subscribe(ctx, "{"+other+"}:events")
			defer func() { _ = ps.Close() }()
			_, err := ps.Receive(ctx)
			return err
		}},
		{"CONFIG GET", func(ctx context.Context) error { return c.ConfigGet(ctx, "maxmemory").Err() }},
		{"FLUSHALL", func(ctx context.Context) error { return c.FlushAll(ctx).Err() }},
		{"KEYS *", func(ctx context.Context) error { return c.Keys(ctx, "*").Err() }},
		{"SCRIPT FLUSH", func(ctx context.Context) error { return c.ScriptFlush(ctx).Err() }},
	}
	for _, tc := range refused {
		t.Run(tc.what, func(t *testing.T) {
			if err := tc.run(ctx); !isNoPerm(err) {
				t.Errorf("as namespace A: %v, want a NOPERM refusal", err)
			}
		})
	}
}

// TestClusterLockStoreTenancy: a namespace the store's selector does not
// pick cannot use it (NamespaceNotAllowed; no Secret, no Redis user for
// it) until it is labelled, which the controller notices by itself (the
// namespace watch). A storeRef to a store that does not exist is
// StoreNotFound. A namespace that stops using the store (its last lock on
// it deleted, or its label removed) loses its Redis user and its
// credentials Secret; the others keep theirs.
func TestClusterLockStoreTenancy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 3})
	srv := redistest.StartStandalone(t)
	nsA, nsB, nsC := h.extra[0], h.extra[1], h.extra[2]
	h.labelNamespace(nsA, tenantLabel, "true")
	h.labelNamespace(nsB, tenantLabel, "true")
	cs := h.createClusterStore("tenancy", aclStandaloneStore(srv.Addr()))
	secret := "redlease-" + cs.Name
	for _, ns := range h.extra {
		h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	}
	ctx := h.ctx()
	admin := srv.Client(t)

	// The harness's waits fail the whole test (h.t), so the phases run in
	// sequence here rather than as subtests.

	// C is not selected.
	{
		dl := h.waitForIn(nsC, "job", "NamespaceNotAllowed", notReadyBecause(v1alpha1.ReasonNamespaceNotAllowed))
		if err := hasCondition(dl, v1alpha1.ConditionStoreReady, metav1.ConditionFalse, v1alpha1.ReasonNamespaceNotAllowed); err != nil {
			t.Error(err)
		}
		if dl.Status.CredentialsSecretRef != nil {
			t.Errorf("status.credentialsSecretRef %+v on a lock whose namespace may not use the store", dl.Status.CredentialsSecretRef)
		}
		h.waitStore(cs, "A and B provisioned", storeProvisioned(2))
		// Over two probe intervals of the store (it reconciles every
		// second), C gets neither a Secret nor a Redis user.
		h.consistently("nothing provisioned for the unselected namespace", 2*time.Second, func() error {
			return notTenant(h, admin, cs, nsC)
		})
		h.waitStore(cs, "still A and B only", storeProvisioned(2))
	}

	// C is labelled.
	{
		h.labelNamespace(nsC, tenantLabel, "true")
		h.waitForIn(nsC, "job", "Ready once its namespace is labelled", readyOn(nsC+"/job", v1alpha1.RedisModeStandalone, secret))
		h.waitStore(cs, "three tenants", storeProvisioned(3))
		users, err := aclUsers(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(users, tenantUser(cs.UID, nsC)) {
			t.Errorf("ACL USERS %v lacks %s", users, tenantUser(cs.UID, nsC))
		}
	}

	// A storeRef to a missing store.
	for _, ref := range []v1alpha1.StoreReference{
		{Kind: v1alpha1.StoreKindClusterLockStore, Name: "absent-" + h.ns},
		{Kind: v1alpha1.StoreKindLockStore, Name: "absent"},
	} {
		name := "lost-" + strings.ToLower(string(ref.Kind))
		h.createIn(nsA, name, onStore(ref.Kind, ref.Name, name))
		dl := h.waitForIn(nsA, name, "StoreNotFound", notReadyBecause(v1alpha1.ReasonStoreNotFound))
		if err := hasCondition(dl, v1alpha1.ConditionStoreReady, metav1.ConditionFalse, v1alpha1.ReasonStoreNotFound); err != nil {
			t.Error(err)
		}
		t.Logf("%s: %s", name, condition(dl, v1alpha1.ConditionReady).Message)
	}

	// A namespace stops using the store when its last lock on it goes,
	// or when the store stops selecting it.
	leaves := []struct {
		how     string
		ns      string
		leave   func()
		tenants int32
	}{
		{"its lock deleted", nsB, func() {
			if err := h.c.Delete(ctx, &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "job"}}); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"its namespace unlabelled", nsC, func() { h.labelNamespace(nsC, tenantLabel, "") }, 1},
	}
	for _, tc := range leaves {
		tc.leave()
		h.waitStore(cs, tc.how+": one tenant fewer", storeProvisioned(tc.tenants))
		h.eventually(tc.how+": its user and credentials Secret deleted", func() error {
			return notTenant(h, admin, cs, tc.ns)
		})
	}
	// C's lock is still there, and may no longer use the store.
	h.waitForIn(nsC, "job", "NamespaceNotAllowed once unlabelled", notReadyBecause(v1alpha1.ReasonNamespaceNotAllowed))
	// A keeps its user and Secret throughout.
	users, err := aclUsers(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"default", tenantUser(cs.UID, nsA)}; !slices.Equal(users, want) {
		t.Errorf("ACL USERS %v, want %v", users, want)
	}
	if data, err := h.secretData(nsA, secret); err != nil || data == nil {
		t.Errorf("%s lost its credentials Secret (%v)", nsA, err)
	}
	h.waitForIn(nsA, "job", "A still Ready", readyOn(nsA+"/job", v1alpha1.RedisModeStandalone, secret))
}

// notTenant checks that namespace ns has neither a credentials Secret of
// store cs nor a Redis user on its server.
func notTenant(h *harness, admin *redis.Client, cs *v1alpha1.ClusterLockStore, ns string) error {
	secret := "redlease-" + cs.Name
	data, err := h.secretData(ns, secret)
	if err != nil {
		return err
	}
	if data != nil {
		return fmt.Errorf("the credentials Secret %s is in %s", secret, ns)
	}
	users, err := aclUsers(h.ctx(), admin)
	if err != nil {
		return err
	}
	if slices.Contains(users, tenantUser(cs.UID, ns)) {
		return fmt.Errorf("ACL USERS %v has a user for %s", users, ns)
	}
	return nil
}

// TestClusterLockStoreRotation: redlease.io/rotate on the store gives
// every tenant a new password. A lease taken with the old one keeps
// renewing throughout (its connection stays authenticated, and the old
// password stays accepted for the grace period, max(2 × the longest TTL,
// 10s) = 10s here), a new connection with the new password works at once,
// one with the old password works during the grace and gets WRONGPASS
// after it. The same annotation on one namespace's Secret rotates that
// namespace's password only.
func TestClusterLockStoreRotation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 2})
	srv := redistest.StartStandalone(t)
	nsA, nsB := h.extra[0], h.extra[1]
	cs := h.createClusterStore("rotate", aclStandaloneStore(srv.Addr()))
	secret := "redlease-" + cs.Name
	ttl := 2 * time.Second
	for _, ns := range h.extra {
		h.labelNamespace(ns, tenantLabel, "true")
		spec := onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job")
		spec.TTL = &metav1.Duration{Duration: ttl}
		h.createIn(ns, "job", spec)
	}
	h.waitStore(cs, "two tenants", storeProvisioned(2))
	dlA := h.waitForIn(nsA, "job", "Ready", readyOn(nsA+"/job", v1alpha1.RedisModeStandalone, secret))
	h.waitForIn(nsB, "job", "Ready", readyOn(nsB+"/job", v1alpha1.RedisModeStandalone, secret))
	ctx := h.ctx()
	password := func(ns string) string { return h.tenantPassword(ns, secret) }
	oldA, oldB := password(nsA), password(nsB)

	// A pod of A holds the lock with the credentials it read before the
	// rotation, and never reads them again.
	holder := h.podClient(dlA)
	locker := newLocker(t, holder, lock.WithIdentity("a-holder"), lock.WithTTL(ttl))
	lease, err := locker.TryAcquire(ctx, nsA+"/job")
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	h.waitForIn(nsA, "job", "the holder observed", holderIs("a-holder", lease.Fence()))

	ping := pinger(h, srv.Addr(), tenantUser(cs.UID, nsA))

	patch := client.MergeFrom(cs.DeepCopy())
	cs.Annotations = map[string]string{v1alpha1.AnnotationRotate: "1"}
	if err := h.c.Patch(ctx, cs, patch); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	var newA string
	h.eventually("new passwords in both Secrets", func() error {
		newA = password(nsA)
		if newA == oldA || password(nsB) == oldB {
			return errNotYet
		}
		return nil
	})
	if err := ping(newA); err != nil {
		t.Errorf("a new connection with the new password: %v", err)
	}
	checkGrace(h, ping, oldA, rotated, 10*time.Second)
	// Past the grace and several TTLs: the lease was renewed all along.
	if err := lease.Err(); err != nil {
		t.Fatalf("the lease held across the rotation ended: %v", err)
	}
	if err := lease.Renew(ctx); err != nil {
		t.Errorf("renewing after the grace period: %v", err)
	}
	h.waitForIn(nsA, "job", "the same holder after the rotation", holderIs("a-holder", lease.Fence()))

	// One namespace: the annotation on B's Secret rotates B only.
	newB := password(nsB)
	h.annotateSecret(nsB, secret, v1alpha1.AnnotationRotate, "b-1")
	h.eventually("B's password rotated", func() error {
		if password(nsB) == newB {
			return errNotYet
		}
		return nil
	})
	if got := password(nsA); got != newA {
		t.Errorf("rotating B's Secret changed A's password too")
	}
	if err := ping(newA); err != nil {
		t.Errorf("A's password after B's rotation: %v", err)
	}
	if err := userClient(t, srv, tenantUser(cs.UID, nsB), password(nsB)).Ping(ctx).Err(); err != nil {
		t.Errorf("B's new password: %v", err)
	}
}

// tenantPassword is the password in namespace ns's credentials Secret.
func (h *harness) tenantPassword(ns, secret string) string {
	h.t.Helper()
	data, err := h.secretData(ns, secret)
	if err != nil || data == nil {
		h.t.Fatalf("%s: credentials Secret %s: %v (found %t)", ns, secret, err, data != nil)
	}
	return string(data[v1alpha1.CredentialsPassword])
}

// pinger returns a function that opens a fresh connection to addr as user
// with a password (no retry, no pool reuse) and pings.
func pinger(h *harness, addr, user string) func(password string) error {
	return func(password string) error {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		defer func() { _ = c.Close() }()
		return c.Ping(h.ctx()).Err()
	}
}

// checkGrace checks that the old password, rotated away at rotated,
// still opens connections well inside the grace period and is refused
// with WRONGPASS once it has run out, not before.
func checkGrace(h *harness, ping func(string) error, old string, rotated time.Time, grace time.Duration) {
	h.t.Helper()
	if since := time.Since(rotated); since < grace/2 {
		if err := ping(old); err != nil {
			h.t.Errorf("a new connection with the old password %v after the rotation, inside the grace: %v", since.Round(time.Millisecond), err)
		}
	} else {
		h.t.Errorf("the new password took %v to reach the Secret: cannot check the grace period", since)
	}
	h.eventually("the old password refused after the grace", func() error {
		err := ping(old)
		if err == nil {
			return errors.New("accepted")
		}
		if !strings.HasPrefix(err.Error(), "WRONGPASS") {
			return fmt.Errorf("refused with %w, want WRONGPASS", err)
		}
		return nil
	})
	if since := time.Since(rotated); since < grace {
		h.t.Errorf("the old password was refused %v after the rotation, before the %v grace ended", since.Round(time.Millisecond), grace)
	}
}

// annotateSecret sets an annotation on Secret ns/name.
func (h *harness) annotateSecret(ns, name, annotation, value string) {
	h.t.Helper()
	var sec corev1Secret
	if err := h.c.Get(h.ctx(), key(ns, name), &sec); err != nil {
		h.t.Fatal(err)
	}
	patch := client.MergeFrom(sec.DeepCopy())
	if sec.Annotations == nil {
		sec.Annotations = map[string]string{}
	}
	sec.Annotations[annotation] = value
	if err := h.c.Patch(h.ctx(), &sec, patch); err != nil {
		h.t.Fatal(err)
	}
}

// TestClusterLockStoreDeletion: deleting a ClusterLockStore with isolation
// ACL runs its finalizer, which deletes its tenants' Redis users (and only
// those: a user of another store, with another prefix, stays); then the
// store is gone and its locks report StoreNotFound.
func TestClusterLockStoreDeletion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 2})
	srv := redistest.StartStandalone(t)
	ctx := h.ctx()
	admin := srv.Client(t)
	// A user of somebody else's, which the store must leave alone.
	if err := admin.Do(ctx, "acl", "setuser", "redlease-00000000-other", "on", ">other-pass", "~x").Err(); err != nil {
		t.Fatal(err)
	}
	cs := h.createClusterStore("doomed", aclStandaloneStore(srv.Addr()))
	for _, ns := range h.extra {
		h.labelNamespace(ns, tenantLabel, "true")
		h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	}
	h.waitStore(cs, "two tenants", storeProvisioned(2))
	users, err := aclUsers(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"default", "redlease-00000000-other", tenantUser(cs.UID, h.extra[0]), tenantUser(cs.UID, h.extra[1])}
	slices.Sort(want)
	if !slices.Equal(users, want) {
		t.Fatalf("ACL USERS %v, want %v", users, want)
	}

	if err := h.c.Delete(ctx, cs); err != nil {
		t.Fatal(err)
	}
	h.eventually("the store gone", func() error {
		err := h.c.Get(ctx, types.NamespacedName{Name: cs.Name}, &v1alpha1.ClusterLockStore{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	// The finalizer deleted the users before it let the store go.
	users, err = aclUsers(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"default", "redlease-00000000-other"}; !slices.Equal(users, want) {
		t.Errorf("ACL USERS %v once the store is gone, want %v", users, want)
	}
	for _, ns := range h.extra {
		h.waitForIn(ns, "job", "StoreNotFound", notReadyBecause(v1alpha1.ReasonStoreNotFound))
	}
}

// TestReleaseACLFinalizers: what an uninstall runs once the manager is gone
// (--release-acl-finalizers): every ClusterLockStore loses the ACL cleanup
// finalizer, so deleting it no longer waits for a controller that will
// never come; stores without it are left alone. Not parallel: it strips the
// finalizer of every store in the API server, the parallel tests' too.
func TestReleaseACLFinalizers(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := t.Context()
	suffix := env.Namespace(t)
	var names []string
	for _, fin := range [][]string{{aclFinalizer}, nil} {
		cs := &v1alpha1.ClusterLockStore{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "uninstalled-" + suffix + "-", Finalizers: fin},
			Spec:       aclStandaloneStore("127.0.0.1:1"),
		}
		if err := env.Client.Create(ctx, cs); err != nil {
			t.Fatal(err)
		}
		names = append(names, cs.Name)
	}
	released, err := ReleaseACLFinalizers(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(released, names[:1]) {
		t.Errorf("released %v, want %v (the store with the finalizer only)", released, names[:1])
	}
	for _, name := range names {
		cs := &v1alpha1.ClusterLockStore{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, cs); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, cs); !apierrors.IsNotFound(err) {
			t.Errorf("ClusterLockStore %s after delete: %v (finalizers %v), want gone", name, err, cs.Finalizers)
		}
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The tests of spec.credentialsSecretName (issue 41, GitOps-friendly
// names): the tenant chooses the name of the Secret its pods read.

// TestChosenCredentialsSecretName: on a ClusterLockStore with isolation ACL,
// locks of one namespace that name the same Secret, another one, or none
// (the derived name) are all Ready, each status naming the Secret its spec
// asks for (podrbac.LockSecretName, what `lockctl rbac -f` grants); every
// one holds the namespace's one user and password, and a pod connecting
// with only the chosen Secret takes its lock. A rotation requested on any
// copy rotates them all. A lock naming a Secret the controller did not
// write, or one another store wrote, is Ready False
// CredentialsSecretConflict with a Warning Event; neither Secret is
// touched and the store stays TenantsProvisioned. A Secret is deleted when
// the last lock naming it is deleted or renamed, not before.
func TestChosenCredentialsSecretName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.labelNamespace(h.ns, tenantLabel, "true")
	cs := h.createClusterStore("gitops", aclStandaloneStore(srv.Addr()))
	derived := "redlease-" + cs.Name
	chosen := func(name, secret string) *v1alpha1.DistributedLock {
		spec := onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, name)
		spec.CredentialsSecretName = secret
		return h.create(name, spec)
	}
	want := map[string]string{"a": "billing-redis", "b": "billing-redis", "c": derived, "d": "billing-other"}
	chosen("a", "billing-redis")
	chosen("b", "billing-redis")
	chosen("c", "")
	chosen("d", "billing-other")
	h.waitStore(cs, "Ready with the namespace", storeProvisioned(1))
	locks := map[string]*v1alpha1.DistributedLock{}
	for name, secret := range want {
		dl := h.waitFor(name, "Ready on "+secret, readyOn(h.ns+"/"+name, v1alpha1.RedisModeStandalone, secret))
		if got := podrbac.LockSecretName(dl); got != secret {
			t.Errorf("%s: podrbac.LockSecretName %q, the controller published %q", name, got, secret)
		}
		locks[name] = dl
	}
	creds := h.sameCredentials(cs.UID, derived, "billing-redis", "billing-other")
	if u := string(creds[v1alpha1.CredentialsUsername]); u != tenantUser(cs.UID, h.ns) {
		t.Errorf("username %q, want the namespace's one user %q", u, tenantUser(cs.UID, h.ns))
	}

	// A pod that reads only the Secret it chose.
	ctx := h.ctx()
	locker := newLocker(t, h.podClient(locks["d"]), lock.WithIdentity("d-pod"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(ctx, h.ns+"/d")
	if err != nil {
		t.Fatalf("acquiring with the credentials of billing-other: %v", err)
	}
	h.waitFor("d", "the holder observed", holderIs("d-pod", lease.Fence()))
	if err := lease.Release(ctx); err != nil {
		t.Error(err)
	}

	// A rotation asked on one copy rotates the namespace's user: every
	// copy gets the new password.
	h.annotateSecret(h.ns, "billing-other", v1alpha1.AnnotationRotate, "1")
	h.eventually("every copy rotated", func() error {
		got, err := h.credentialsOf(cs.UID, derived, "billing-redis", "billing-other")
		if err == nil && string(got[v1alpha1.CredentialsPassword]) == string(creds[v1alpha1.CredentialsPassword]) {
			return errors.New("the password is unchanged")
		}
		return err
	})

	h.conflicts(cs)

	// Cleanup follows the last lock that names a Secret.
	h.deleteLock("d")
	h.eventually("billing-other deleted with its only lock", h.secretGone("billing-other"))
	h.deleteLock("a")
	h.consistently("billing-redis kept: b still names it", 3*time.Second, func() error {
		data, err := h.secretData(h.ns, "billing-redis")
		if err == nil && data == nil {
			return errors.New("deleted")
		}
		return err
	})
	h.deleteLock("b")
	h.eventually("billing-redis deleted with its last lock", h.secretGone("billing-redis"))

	// Renaming: the new Secret is written and published, the old one
	// deleted.
	var c v1alpha1.DistributedLock
	if err := h.c.Get(ctx, key(h.ns, "c"), &c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.CredentialsSecretName = "billing-renamed"
	if err := h.c.Patch(ctx, &c, patch); err != nil {
		t.Fatalf("renaming c's Secret: %v", err)
	}
	h.waitFor("c", "Ready on billing-renamed", readyOn(h.ns+"/c", v1alpha1.RedisModeStandalone, "billing-renamed"))
	h.eventually("the derived Secret deleted: no lock names it", h.secretGone(derived))
}

// conflicts checks the refusals: a foreign Secret, and a Secret another
// store (a LockStore of the namespace) wrote.
func (h *harness) conflicts(cs *v1alpha1.ClusterLockStore) {
	h.t.Helper()
	foreign := map[string][]byte{"password": []byte("someone else's")}
	if err := h.c.Create(h.ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "billing-foreign"}, Data: foreign}); err != nil {
		h.t.Fatal(err)
	}
	spec := onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "e")
	spec.CredentialsSecretName = "billing-foreign"
	h.create("e", spec)
	dl := h.waitFor("e", "CredentialsSecretConflict", notReadyBecause(v1alpha1.ReasonCredentialsSecretConflict))
	if msg, want := condition(dl, v1alpha1.ConditionReady).Message, fmt.Sprintf("the Secret %s/billing-foreign exists and was not written by redlease for ClusterLockStore/%s", h.ns, cs.Name); !strings.Contains(msg, want) {
		h.t.Errorf("Ready message %q, want it to say %q", msg, want)
	}
	h.waitEvent("e", corev1.EventTypeWarning, v1alpha1.ReasonCredentialsSecretConflict)

	// The LockStore's lock names the Secret the ClusterLockStore writes.
	srv := redistest.StartStandalone(h.t)
	h.createStore(h.t, "own", srv.Addr())
	spec = onStore(v1alpha1.StoreKindLockStore, "own", "f")
	spec.CredentialsSecretName = "billing-redis"
	h.create("f", spec)
	h.waitFor("f", "CredentialsSecretConflict", notReadyBecause(v1alpha1.ReasonCredentialsSecretConflict))

	h.waitStore(cs, "still provisioned", storeProvisioned(1))
	data, err := h.secretData(h.ns, "billing-foreign")
	if err != nil || !maps.EqualFunc(data, foreign, func(a, b []byte) bool { return string(a) == string(b) }) {
		h.t.Errorf("the foreign Secret changed: %v %v", data, err)
	}
	if _, err := h.credentialsOf(cs.UID, "billing-redis"); err != nil {
		h.t.Errorf("the LockStore's lock changed the ClusterLockStore's Secret: %v", err)
	}
	h.deleteLock("e")
	h.deleteLock("f")
}

// TestInlineLockChosenCredentialsSecretName: an inline lock writes its
// credentials under spec.credentialsSecretName and publishes it; renamed,
// it writes the new one and deletes the old; another inline lock naming
// the first one's Secret is CredentialsSecretConflict and changes nothing.
func TestInlineLockChosenCredentialsSecretName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t, redistest.WithPassword("inline-pw"))
	h.createSecret("redis-auth", map[string]string{"password": "inline-pw"})
	spec := standaloneSpec(srv.Addr())
	spec.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "redis-auth", Key: "password"}
	spec.CredentialsSecretName = "settle-redis"
	dl := h.create("settle", spec)
	h.waitFor("settle", "Ready on settle-redis", publishes("settle-redis"))
	first := h.inlineSecret("settle-redis", dl)

	var cur v1alpha1.DistributedLock
	if err := h.c.Get(h.ctx(), key(h.ns, "settle"), &cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.CredentialsSecretName = "settle-redis-2"
	if err := h.c.Patch(h.ctx(), &cur, patch); err != nil {
		t.Fatal(err)
	}
	h.waitFor("settle", "Ready on settle-redis-2", publishes("settle-redis-2"))
	h.eventually("the old Secret deleted", h.secretGone("settle-redis"))
	second := h.inlineSecret("settle-redis-2", dl)
	if string(second[v1alpha1.CredentialsPassword]) != string(first[v1alpha1.CredentialsPassword]) {
		t.Error("the renamed Secret holds another password")
	}

	other := standaloneSpec(srv.Addr())
	other.CredentialsSecretName = "settle-redis-2"
	h.create("other", other)
	h.waitFor("other", "CredentialsSecretConflict", notReadyBecause(v1alpha1.ReasonCredentialsSecretConflict))
	h.inlineSecret("settle-redis-2", dl)
}

// publishes waits for Ready with status.credentialsSecretRef naming secret.
func publishes(secret string) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		if ref := dl.Status.CredentialsSecretRef; ref == nil || ref.Name != secret {
			return fmt.Errorf("status.credentialsSecretRef %+v, want %s", ref, secret)
		}
		return nil
	}
}

// inlineSecret reads the inline lock dl's credentials Secret name and
// checks that it is labelled and owned as the lock's.
func (h *harness) inlineSecret(name string, dl *v1alpha1.DistributedLock) map[string][]byte {
	h.t.Helper()
	var s corev1.Secret
	if err := h.c.Get(h.ctx(), key(h.ns, name), &s); err != nil {
		h.t.Fatalf("Secret %s: %v", name, err)
	}
	if s.Labels[v1alpha1.LabelStoreUID] != string(dl.UID) || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != dl.UID {
		h.t.Errorf("Secret %s: labels %v, owners %+v; want the lock %s's", name, s.Labels, s.OwnerReferences, dl.UID)
	}
	return s.Data
}

// credentialsOf reads the credentials Secrets names of the harness's
// namespace, checks that the store with uid wrote each and that they hold
// the same data, and returns it.
func (h *harness) credentialsOf(uid types.UID, names ...string) (map[string][]byte, error) {
	var first map[string][]byte
	for _, name := range names {
		var s corev1.Secret
		if err := h.c.Get(h.ctx(), key(h.ns, name), &s); err != nil {
			return nil, fmt.Errorf("Secret %s: %w", name, err)
		}
		if s.Labels[v1alpha1.LabelStoreUID] != string(uid) {
			return nil, fmt.Errorf("Secret %s is labelled %v, not as written for store %s", name, s.Labels, uid)
		}
		if first == nil {
			first = s.Data
			continue
		}
		if !maps.EqualFunc(first, s.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
			return nil, fmt.Errorf("Secret %s holds other credentials than %s", name, names[0])
		}
	}
	return first, nil
}

// sameCredentials is credentialsOf, waited for (copies are written one
// after the other).
func (h *harness) sameCredentials(uid types.UID, names ...string) map[string][]byte {
	h.t.Helper()
	var out map[string][]byte
	h.eventually("the same credentials in every copy", func() error {
		var err error
		out, err = h.credentialsOf(uid, names...)
		return err
	})
	return out
}

// secretGone reports whether Secret name of the harness's namespace is
// gone.
func (h *harness) secretGone(name string) func() error {
	return func() error {
		data, err := h.secretData(h.ns, name)
		if err == nil && data != nil {
			return errors.New("still there")
		}
		return err
	}
}

// deleteLock deletes lock name of the harness's namespace.
func (h *harness) deleteLock(name string) {
	h.t.Helper()
	dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
	if err := h.c.Delete(h.ctx(), dl); err != nil {
		h.t.Fatalf("deleting %s: %v", name, err)
	}
}

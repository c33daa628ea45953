package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestSecrets: the password comes from the referenced Secret; a missing
// Secret is SecretUnavailable, a wrong password AuthFailed; a Secret update
// is picked up at once (the Secret watch, with a ten-minute probe interval).
func TestSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{probeInterval: 10 * time.Minute})
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret-pass"))
	ctx := h.ctx()
	h.createSecret("good", map[string]string{"password": "s3cret-pass"})
	h.createSecret("bad", map[string]string{"password": "wrong-pass"})

	withSecret := func(name string) v1alpha1.DistributedLockSpec {
		s := standaloneSpec(srv.Addr())
		s.Redis.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: name, Key: "password"}
		return s
	}
	h.create("good", withSecret("good"))
	h.create("bad", withSecret("bad"))
	h.create("missing", withSecret("absent"))

	h.waitFor("good", "Ready with the Secret's password", isReady)
	h.waitFor("bad", "AuthFailed", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAuthFailed); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionEndpointsResolved, metav1.ConditionFalse, v1alpha1.ReasonAuthFailed)
	})
	h.waitFor("missing", "SecretUnavailable", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSecretUnavailable)
	})

	// Fix the bad Secret: the watch brings the lock back without waiting
	// for the probe interval.
	var bad = &corev1Secret{}
	if err := h.c.Get(ctx, key(h.ns, "bad"), bad); err != nil {
		t.Fatal(err)
	}
	bad.Data = map[string][]byte{"password": []byte("s3cret-pass")}
	if err := h.c.Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	h.waitFor("bad", "Ready after the Secret was fixed", isReady)

	// Break the good one: Ready goes, again without a probe interval.
	good := &corev1Secret{}
	if err := h.c.Get(ctx, key(h.ns, "good"), good); err != nil {
		t.Fatal(err)
	}
	good.Data = map[string][]byte{"password": []byte("nope")}
	if err := h.c.Update(ctx, good); err != nil {
		t.Fatal(err)
	}
	h.waitFor("good", "AuthFailed after the Secret changed", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAuthFailed)
	})
}

// TestASecretTheControllerDidNotWriteIsNeverOverwritten: a Secret already
// named like an inline lock's credentials Secret, without the store's label,
// stays as it was, and the lock reports CredentialsSecretConflict.
func TestASecretTheControllerDidNotWriteIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.createSecret("redlease-lock-squat", map[string]string{"password": "someone else's"})
	h.create("squat", standaloneSpec(srv.Addr()))
	h.waitFor("squat", "CredentialsSecretConflict", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonCredentialsSecretConflict)
	})
	s := &corev1Secret{}
	if err := h.c.Get(h.ctx(), key(h.ns, "redlease-lock-squat"), s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data) != 1 || string(s.Data["password"]) != "someone else's" {
		t.Errorf("the Secret the controller did not write was overwritten: %v", s.Data)
	}
}

// TestAForeignSecretUnderAStoresNameIsNotPublished: a Secret someone else
// created under the name a LockStore derives for its namespace stays as it
// was, and the lock on the store is CredentialsSecretConflict. Before, the
// store failed to write it (TenantsProvisioned False) but the lock, which
// only checked that a Secret of that name existed, was Ready and published
// it to its pods.
func TestAForeignSecretUnderAStoresNameIsNotPublished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.createSecret("redlease-lockstore-team", map[string]string{"password": "someone else's"})
	h.createStore(t, "team", srv.Addr())
	h.create("job", onStore(v1alpha1.StoreKindLockStore, "team", "job"))
	h.waitFor("job", "CredentialsSecretConflict", notReadyBecause(v1alpha1.ReasonCredentialsSecretConflict))
	s := &corev1Secret{}
	if err := h.c.Get(h.ctx(), key(h.ns, "redlease-lockstore-team"), s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data) != 1 || string(s.Data["password"]) != "someone else's" {
		t.Errorf("the Secret the controller did not write was overwritten: %v", s.Data)
	}
}

package controllers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestLockRelease: a LockRelease revokes a live holder (its lease ends
// lost, its key keeps its PTTL as a tombstone), completes with the holder
// and fence in status, and the Event on the lock names the requester, the
// holder and the fence; a second LockRelease with Force frees the
// tombstone with the counter raised; one naming a stale fence is refused;
// one naming a missing lock ends LockNotFound.
func TestLockRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.create("stuck", standaloneSpec(srv.Addr()))
	dl := h.waitFor("stuck", "Ready", isReady)
	key := dl.Status.Key
	me := whoAmI(t, h.env)
	locker := newLocker(t, srv.Client(t), lock.WithIdentity("stuck-pod:1"), lock.WithTTL(3*time.Second), lock.WithRenewInterval(500*time.Millisecond), lock.WithFencing(true))
	lease, err := locker.TryAcquire(h.ctx(), key)
	if err != nil {
		t.Fatal(err)
	}

	stale := clampInt64(lease.Fence()) - 1
	h.createRelease("stale", v1alpha1.LockReleaseSpec{LockName: "stuck", Fence: &stale, RequestedBy: me})
	lr := h.waitRelease("stale", metav1.ConditionFalse)
	if c := meta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete); c.Reason != v1alpha1.ReasonRefused {
		t.Fatalf("a stale fence: %+v, want Refused", c)
	}
	select {
	case <-lease.Done():
		t.Fatal("a refused LockRelease ended the lease")
	default:
	}

	fence := clampInt64(lease.Fence())
	h.createRelease("revoke", v1alpha1.LockReleaseSpec{LockName: "stuck", Fence: &fence, RequestedBy: me})
	lr = h.waitRelease("revoke", metav1.ConditionTrue)
	if lr.Status.Holder != "stuck-pod:1" || lr.Status.Fence != fence || lr.Status.GrantsResumeAt == nil {
		t.Errorf("revoke status %+v, want holder stuck-pod:1, fence %d, grantsResumeAt", lr.Status, fence)
	}
	select {
	case <-lease.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the revoked lease did not end within a renew interval and a round trip")
	}
	if pttl := srv.Client(t).PTTL(h.ctx(), key).Val(); pttl <= 0 {
		t.Errorf("the revoked key's PTTL is %v, want the tombstone to keep it", pttl)
	}
	ev := h.waitEvent("stuck", corev1.EventTypeWarning, v1alpha1.ReasonLockReleased)
	for _, want := range []string{me, "stuck-pod:1", fmt.Sprintf("fence %d", fence), "revoke"} {
		if !strings.Contains(ev.Note, want) {
			t.Errorf("Event %q does not name %q", ev.Note, want)
		}
	}

	waiter := newLocker(t, srv.Client(t), lock.WithIdentity("next-pod:1"), lock.WithTTL(3*time.Second), lock.WithFencing(true))
	next := make(chan *lock.Lease, 1)
	go func() {
		l, err := waiter.Acquire(h.ctx(), key)
		if err != nil {
			t.Error(err)
		}
		next <- l
	}()
	time.Sleep(200 * time.Millisecond) // the waiter is in the line, on the tombstone
	pttl, start := srv.Client(t).PTTL(h.ctx(), key).Val(), time.Now()
	h.createRelease("force", v1alpha1.LockReleaseSpec{LockName: "stuck", Mode: v1alpha1.ReleaseModeForce, RequestedBy: me})
	if l := <-next; l != nil {
		t.Logf("MEASURE force through the controller: LockRelease created to the next holder %v (the tombstone had %v left)",
			time.Since(start).Round(time.Millisecond), pttl.Round(time.Millisecond))
		if l.Fence() <= lease.Fence() {
			t.Errorf("the next holder's fence %d, the forced holder's %d", l.Fence(), lease.Fence())
		}
		_ = l.Release(h.ctx())
	}
	lr = h.waitRelease("force", metav1.ConditionTrue)
	if lr.Status.RaisedFence <= fence || srv.Client(t).Exists(h.ctx(), key).Val() != 0 {
		t.Errorf("force status %+v, want the key gone and the counter above %d", lr.Status, fence)
	}

	h.createRelease("nolock", v1alpha1.LockReleaseSpec{LockName: "missing", RequestedBy: me})
	if c := meta.FindStatusCondition(h.waitRelease("nolock", metav1.ConditionFalse).Status.Conditions, v1alpha1.ConditionComplete); c.Reason != v1alpha1.ReasonLockNotFound {
		t.Errorf("a missing lock: %+v, want LockNotFound", c)
	}
}

// TestLockReleaseRequesterPolicy: with config/breakglass's admission
// policy, the API server refuses a LockRelease whose requestedBy is not
// the authenticated user, and accepts one that names them.
func TestLockReleaseRequesterPolicy(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := t.Context()
	me := whoAmI(t, env)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join( //nolint:gosec // G304: a file of this repository
		root, "config", "breakglass", "requester-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	var policy admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	if err := yaml.Unmarshal([]byte(docs[0]), &policy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &binding); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &policy); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(t.Context(), &binding)
		_ = env.Client.Delete(t.Context(), &policy)
	})
	ns := env.Namespace(t)
	deadline := time.Now().Add(waitTimeout)
	for i := 0; ; i++ {
		lr := &v1alpha1.LockRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("liar-%d", i)},
			Spec: v1alpha1.LockReleaseSpec{LockName: "x", RequestedBy: "someone-else"}}
		err := env.Client.Create(ctx, lr)
		if err != nil && strings.Contains(err.Error(), "spec.requestedBy must be your user name") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a LockRelease naming someone else as requester: %v, want the policy's refusal", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	honest := &v1alpha1.LockRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "honest"},
		Spec: v1alpha1.LockReleaseSpec{LockName: "x", RequestedBy: me}}
	if err := env.Client.Create(ctx, honest); err != nil {
		t.Fatalf("a LockRelease naming its requester %q: %v", me, err)
	}
}

// whoAmI is the user name the API server authenticates env's client as
// (SelfSubjectReview), what the admission policy compares requestedBy to.
func whoAmI(t *testing.T, env *kubetest.Env) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo.Username
}

func (h *harness) createRelease(name string, spec v1alpha1.LockReleaseSpec) {
	h.t.Helper()
	lr := &v1alpha1.LockRelease{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: spec}
	if err := h.c.Create(h.ctx(), lr); err != nil {
		h.t.Fatalf("creating LockRelease %s: %v", name, err)
	}
}

// waitRelease waits until LockRelease name is Complete with status.
func (h *harness) waitRelease(name string, status metav1.ConditionStatus) *v1alpha1.LockRelease {
	h.t.Helper()
	var lr v1alpha1.LockRelease
	h.eventually("LockRelease "+name+" Complete="+string(status), func() error {
		if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &lr); err != nil {
			return err
		}
		c := meta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete)
		if c == nil || c.Status != status {
			return errors.New(fmt.Sprint("conditions ", lr.Status.Conditions))
		}
		return nil
	})
	return &lr
}

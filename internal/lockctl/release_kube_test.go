package lockctl_test

import (
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
)

// kubeReleaseCase is one `lockctl release` in TestReleaseThroughKubernetes:
// what the LockRelease must ask for, the Complete condition the test
// (acting as the controller) answers with, and what lockctl must say.
type kubeReleaseCase struct {
	name      string
	args      []string
	mode      v1alpha1.ReleaseMode
	fence     *int64
	answer    metav1.Condition
	outcome   string
	code      int
	wantOut   string // in stdout
	wantErr   []string
	deadline  time.Duration // how long lockctl should take at least (--timeout)
	noRequest bool          // a usage error: no LockRelease is created
}

// TestReleaseThroughKubernetes: `lockctl release LOCK` against a real API
// server creates a LockRelease for the lock with the SelfSubjectReview's
// user as spec.requestedBy (Revoke by default, Force with --now, the
// fence with --fence), waits for the controller's Complete condition and
// reports it: exit 0 printing the outcome when True, exit 1 naming the
// reason and message when False, exit 1 naming the controller's message
// when --timeout runs out while it is Unknown (Pending). No controller
// runs in these tests: the test answers as the controller does.
func TestReleaseThroughKubernetes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	publishLock(t, env, ns, "stuck", ns+"/stuck", "127.0.0.1:1", "")
	me := selfSubject(t, env)
	fence := int64(1234)
	cases := []kubeReleaseCase{
		{name: "revoke", args: []string{"stuck", "-n", ns, "--fence", "1234"}, mode: v1alpha1.ReleaseModeRevoke, fence: &fence,
			answer:  metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRevoked, Message: "revoked"},
			outcome: "revoked holder stuck-pod:1 (fence 1234)", wantOut: "revoked holder stuck-pod:1 (fence 1234)"},
		{name: "force", args: []string{ns + "/stuck", "--now"}, mode: v1alpha1.ReleaseModeForce,
			answer:  metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonForced, Message: "forced"},
			outcome: "forced free; fence counter raised to 1236", wantOut: "forced free; fence counter raised to 1236"},
		{name: "refused", args: []string{"stuck", "-n", ns, "--fence", "1"}, mode: v1alpha1.ReleaseModeRevoke, fence: ptr.To(int64(1)),
			answer: metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRefused, Message: "the lock's fence is not the one named"},
			code:   ExitErrorCode, wantErr: []string{"Refused", "the lock's fence is not the one named"}},
		{name: "pending past --timeout", args: []string{"stuck", "-n", ns, "--timeout", "2s"}, mode: v1alpha1.ReleaseModeRevoke,
			answer: metav1.Condition{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonPending, Message: "the lock's master is unknown"},
			code:   ExitErrorCode, wantErr: []string{"not complete within --timeout", "the lock's master is unknown"}, deadline: 2 * time.Second},
		{name: "no lock named", args: []string{"-n", ns}, code: ExitUsageCode, wantErr: []string{"name the DistributedLock"}, noRequest: true},
		{name: "a malformed lock name", args: []string{ns + "/stuck/x"}, code: ExitUsageCode, wantErr: []string{"want NAME or NAMESPACE/NAME"}, noRequest: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { kubeRelease(t, env, ns, kubeconfig, me, c) })
	}
}

// The exit codes of internal/lockctl/exitcodes.go.
const (
	ExitErrorCode = 1
	ExitUsageCode = 2
)

func selfSubject(t *testing.T, env *kubetest.Env) string {
	t.Helper()
	review, err := kubernetes.NewForConfigOrDie(env.Config).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo.Username
}

func kubeRelease(t *testing.T, env *kubetest.Env, ns, kubeconfig, me string, c kubeReleaseCase) {
	done := make(chan result, 1)
	go func() {
		done <- lockctl(t, append([]string{"release", "--kubeconfig", kubeconfig}, c.args...)...)
	}()
	var lr *v1alpha1.LockRelease
	if !c.noRequest {
		lr = answerRelease(t, env, ns, c.answer, c.outcome)
		checkRequest(t, lr, me, c)
	}
	r := <-done
	if r.code != c.code || !strings.Contains(r.stdout, c.wantOut) || r.took < c.deadline {
		t.Fatalf("exit %d after %v, stdout %q, stderr %q; want exit %d, at least %v, stdout with %q", r.code, r.took, r.stdout, r.stderr, c.code, c.deadline, c.wantOut)
	}
	if lr != nil && c.code == 0 && !strings.Contains(r.stdout, ns+"/"+lr.Name) {
		t.Errorf("stdout %q does not name the LockRelease %s/%s", r.stdout, ns, lr.Name)
	}
	for _, want := range c.wantErr {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
	if c.noRequest {
		var list v1alpha1.LockReleaseList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, lr := range list.Items {
			if apimeta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete) == nil {
				t.Errorf("a usage error created LockRelease %s", lr.Name)
			}
		}
	}
}

func checkRequest(t *testing.T, lr *v1alpha1.LockRelease, me string, c kubeReleaseCase) {
	t.Helper()
	s := lr.Spec
	fenceOK := (s.Fence == nil) == (c.fence == nil) && (c.fence == nil || *s.Fence == *c.fence)
	if s.LockName != "stuck" || s.Mode != c.mode || s.RequestedBy != me || !fenceOK || !strings.HasPrefix(lr.Name, "stuck-") {
		t.Errorf("LockRelease %s: spec %+v (fence %v); want lock stuck, mode %s, requestedBy %q (the SelfSubjectReview's), fence %v",
			lr.Name, s, s.Fence, c.mode, me, c.fence)
	}
}

// answerRelease waits for a LockRelease in ns without a Complete
// condition, as the controller would, and sets cond (and outcome) on it.
func answerRelease(t *testing.T, env *kubetest.Env, ns string, cond metav1.Condition, outcome string) *v1alpha1.LockRelease {
	t.Helper()
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		var list v1alpha1.LockReleaseList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			lr := &list.Items[i]
			if apimeta.FindStatusCondition(lr.Status.Conditions, v1alpha1.ConditionComplete) != nil {
				continue
			}
			cond.Type = v1alpha1.ConditionComplete
			apimeta.SetStatusCondition(&lr.Status.Conditions, cond)
			lr.Status.Outcome = outcome
			if err := env.Client.Status().Update(t.Context(), lr); err != nil {
				t.Fatal(err)
			}
			return lr
		}
	}
	t.Fatal("lockctl created no LockRelease within 30s")
	return nil
}

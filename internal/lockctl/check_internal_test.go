package lockctl

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/redlease/redlease/api/v1alpha1"
)

// fakeDiscovery serves one APIResourceList for redlease.io/v1alpha1, or
// err.
type fakeDiscovery struct {
	kinds []string
	err   error
}

func (f fakeDiscovery) ServerResourcesForGroupVersion(string) (*metav1.APIResourceList, error) {
	if f.err != nil {
		return nil, f.err
	}
	list := &metav1.APIResourceList{GroupVersion: v1alpha1.GroupVersion.String()}
	for _, k := range f.kinds {
		plural := strings.ToLower(k) + "s"
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: plural, Kind: k}, metav1.APIResource{Name: plural + "/status", Kind: k})
	}
	return list, nil
}

// TestCRDCheck: every kind of api/v1alpha1 must be served; a group that is
// not served, or served by CRDs of another version without one of the
// kinds, fails with what to do. (The served case runs against a real API
// server in TestCheckInstallLease.)
func TestCRDCheck(t *testing.T) {
	if got := strings.Join(apiKinds(), ","); got != "ClusterLockStore,DistributedLock,LockRelease,LockStore" {
		t.Fatalf("apiKinds() = %s", got)
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "redlease.io"}, "v1alpha1")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "redlease.io"}, "v1alpha1", nil)
	for _, tc := range []struct {
		name   string
		d      fakeDiscovery
		passed bool
		final  bool
		want   string
	}{
		{"all served", fakeDiscovery{kinds: []string{"DistributedLock", "LockStore", "ClusterLockStore", "LockRelease"}}, true, false, "redlease.io/v1alpha1 serves ClusterLockStore, DistributedLock, LockRelease, LockStore"},
		{"group not served", fakeDiscovery{err: notFound}, false, false, "does not serve redlease.io/v1alpha1: the CRDs are not installed"},
		{"a kind missing", fakeDiscovery{kinds: []string{"DistributedLock"}}, false, false, "serves redlease.io/v1alpha1 without ClusterLockStore, LockRelease, LockStore"},
		{"discovery forbidden", fakeDiscovery{err: forbidden}, false, true, "discovering redlease.io/v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passed, detail, final := (&crdCheck{}).step(t.Context(), &checkEnv{discovery: tc.d})
			if passed != tc.passed || (final != nil) != tc.final || !strings.Contains(detail, tc.want) {
				t.Errorf("step = %v, %q, %v; want passed %v, final %v, detail with %q", passed, detail, final, tc.passed, tc.final, tc.want)
			}
		})
	}
}

// TestRunInstallCheckStopsAtTimeout: a check that never passes fails the
// run once the timeout has run out, with its last detail; a final error
// ends its check at once; passed checks are printed as such.
func TestRunInstallCheckStopsAtTimeout(t *testing.T) {
	var out bytes.Buffer
	checks := []check{
		&stubCheck{label: "ok", after: 2},
		&stubCheck{label: "never", after: -1},
		&stubCheck{label: "denied", final: true},
	}
	start := time.Now()
	err := runInstallCheck(context.Background(), &out, &checkEnv{}, checks, 300*time.Millisecond, 20*time.Millisecond)
	took := time.Since(start)
	if exitCodeFor(err) != ExitError || took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("err %v (exit %d) after %v; want exit 1 after the 300ms timeout", err, exitCodeFor(err), took)
	}
	for _, want := range []string{"ok    ok       passed on step 2", "FAIL  never    step ", "(not passed within 300ms)", "FAIL  denied   no permission", "2 of 3 checks did not pass"} {
		if !strings.Contains(out.String()+err.Error(), want) {
			t.Errorf("output does not say %q:\n%s%v", want, out.String(), err)
		}
	}
	if c := checks[2].(*stubCheck); c.steps != 1 {
		t.Errorf("a check with a final error was stepped %d times, want 1", c.steps)
	}
}

// stubCheck passes on step `after` (never when negative), or fails finally.
type stubCheck struct {
	label string
	after int
	final bool
	steps int
}

func (s *stubCheck) name() string { return s.label }

func (s *stubCheck) step(context.Context, *checkEnv) (bool, string, error) {
	s.steps++
	switch {
	case s.final:
		return false, "", errNoPermission
	case s.after >= 0 && s.steps >= s.after:
		return true, "passed on step " + strconv.Itoa(s.steps), nil
	}
	return false, "step " + strconv.Itoa(s.steps), nil
}

var errNoPermission = errors.New("no permission")

package controllers

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestStandalone: a reachable server makes the lock Ready with its endpoint
// in status; killing it makes Ready False (EndpointUnreachable) with a
// Warning Event; starting it again makes the lock Ready again with a
// Normal Event (the first Ready has none).
func TestStandalone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.create("solo", standaloneSpec(srv.Addr()))

	dl := h.waitFor("solo", "Ready", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return hasCondition(dl, v1alpha1.ConditionEndpointsResolved, metav1.ConditionTrue, v1alpha1.ReasonEndpointsResolved)
	})
	if dl.Status.Master != srv.Addr() {
		t.Errorf("status.master = %q, want %q", dl.Status.Master, srv.Addr())
	}
	if len(dl.Status.Endpoints) != 1 {
		t.Fatalf("status.endpoints = %+v, want one", dl.Status.Endpoints)
	}
	ep := dl.Status.Endpoints[0]
	if ep.Address != srv.Addr() || ep.Role != v1alpha1.EndpointRoleMaster || !ep.Reachable || ep.RunID == "" || !strings.HasPrefix(ep.Version, "7.") && !strings.HasPrefix(ep.Version, "8.") {
		t.Errorf("endpoint = %+v, want the master, reachable, with run_id and version", ep)
	}
	expectServerName(t, srv, ep)
	if dl.Status.ObservedGeneration != dl.Generation {
		t.Errorf("observedGeneration %d, generation %d", dl.Status.ObservedGeneration, dl.Generation)
	}
	// No replica guard or quorum in Standalone mode.
	for _, typ := range []string{v1alpha1.ConditionReplicationGuarded, v1alpha1.ConditionQuorumAvailable} {
		if c := condition(dl, typ); c.Type != "" {
			t.Errorf("unexpected condition %s in Standalone mode", typ)
		}
	}

	srv.Kill()
	dl = h.waitFor("solo", "Ready=False after the server was killed", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable)
	})
	if ep := dl.Status.Endpoints[0]; ep.Reachable || ep.LastError == "" {
		t.Errorf("endpoint after kill = %+v, want unreachable with lastError", ep)
	}
	ev := h.waitEvent("solo", corev1.EventTypeWarning, v1alpha1.ReasonEndpointUnreachable)
	if !strings.Contains(ev.Note, srv.Addr()) {
		t.Errorf("Event note %q does not name the server", ev.Note)
	}
	// The first Ready is routine and has no Event: 10,000 locks applied
	// together would write 10,000 of them.
	if n := availableEvents(h, "solo"); n != 0 {
		t.Errorf("%d Available Events before any recovery, want 0", n)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	h.waitFor("solo", "Ready again after the server came back", isReady)
	h.eventually("an Available Event for the recovery", func() error {
		if n := availableEvents(h, "solo"); n != 1 {
			return fmt.Errorf("%d Available Events, want 1", n)
		}
		return nil
	})
}

// availableEvents counts the Available Events recorded on lock name.
func availableEvents(h *harness, name string) int {
	n := 0
	for _, e := range h.events(name) {
		if e.Reason == v1alpha1.ReasonAvailable {
			n += occurrences(e)
		}
	}
	return n
}

// occurrences is how many times an Event was recorded: Events that repeat
// (same object, reason and note) become a series.
func occurrences(e eventsv1.Event) int {
	if e.Series != nil {
		return int(e.Series.Count)
	}
	return 1
}

// expectServerName checks that ep names srv as srv names itself: redis (no
// server_name) or valkey (whose redis_version is the Redis version it is
// compatible with), with its own version.
func expectServerName(t *testing.T, srv *redistest.Server, ep v1alpha1.EndpointStatus) {
	t.Helper()
	info, err := srv.Info(t.Context(), "server")
	if err != nil {
		t.Fatal(err)
	}
	name := cmp.Or(info["server_name"], "redis")
	if want := name + " " + cmp.Or(info[name+"_version"], info["redis_version"]); ep.Server != want {
		t.Errorf("endpoint server %q, want %q", ep.Server, want)
	}
}

package controllers

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestServiceEndpointSlices: a lock that names a Service resolves to the
// ready endpoints of its EndpointSlices, on the target port of the Service
// port it names (not-ready endpoints and other ports are ignored), and an
// EndpointSlice change shows in status at once although the probe interval
// is ten minutes: the EndpointSlice watch triggers the reconcile.
//
// EndpointSlice validation refuses loopback addresses, so the slices use
// TEST-NET addresses (192.0.2.0/24) that the test's dialer maps to the
// loopback servers.
func TestServiceEndpointSlices(t *testing.T) {
	t.Parallel()
	a := redistest.StartStandalone(t)
	b := redistest.StartStandalone(t)
	h := newHarness(t, harnessOptions{
		probeInterval: 10 * time.Minute,
		dialer: mapDialer(map[string]string{
			"192.0.2.1:6379": a.Addr(),
			"192.0.2.2:6379": b.Addr(),
		}),
	})
	ctx := h.ctx()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "redis"},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{
				{Name: "metrics", Port: 9121},
				{Name: "redis", Port: 16379},
			},
		},
	}
	if err := h.c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: h.ns, Name: "redis-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "redis"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"192.0.2.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"192.0.2.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("metrics"), Port: ptr.To[int32](9121)},
			{Name: ptr.To("redis"), Port: ptr.To[int32](6379)},
		},
	}
	if err := h.c.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	h.create("via-service", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{
		Mode:    v1alpha1.RedisModeStandalone,
		Service: &v1alpha1.ServiceReference{Name: "redis", Port: 16379},
	}})
	dl := h.waitFor("via-service", "Ready through the Service", isReady)
	if len(dl.Status.Endpoints) != 1 || dl.Status.Endpoints[0].Address != "192.0.2.1:6379" || dl.Status.Master != "192.0.2.1:6379" {
		t.Fatalf("endpoints %+v, master %q; want only the ready endpoint 192.0.2.1:6379", dl.Status.Endpoints, dl.Status.Master)
	}
	runA := dl.Status.Endpoints[0].RunID
	reconciles := h.counter("via-service").Load()

	// Move the ready endpoint to the other server.
	slice.Endpoints[0].Addresses = []string{"192.0.2.2"}
	if err := h.c.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	dl = h.waitFor("via-service", "the EndpointSlice change reflected", func(dl *v1alpha1.DistributedLock) error {
		if len(dl.Status.Endpoints) != 1 || dl.Status.Endpoints[0].Address != "192.0.2.2:6379" {
			return fmt.Errorf("endpoints %+v", dl.Status.Endpoints)
		}
		return isReady(dl)
	})
	if dl.Status.Endpoints[0].RunID == runA {
		t.Errorf("run_id did not change: the controller did not talk to the new server")
	}
	if got := h.counter("via-service").Load() - reconciles; got > 5 {
		t.Errorf("%d reconciles for one EndpointSlice change", got)
	}

	// No ready endpoint at all.
	slice.Endpoints = slice.Endpoints[1:]
	if err := h.c.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	h.waitFor("via-service", "EndpointsUnresolved without ready endpoints", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointsUnresolved)
	})
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestPerLockMetrics: each lock has its own ready, held, fence high water
// and holder-since series, following its status, gone when it is deleted.
func TestPerLockMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.create("metered", standaloneSpec(srv.Addr()))
	dl := h.waitFor("metered", "Ready", isReady)
	gauge := func(what string) float64 {
		t.Helper()
		switch what {
		case "ready":
			return testutil.ToFloat64(lockReady.WithLabelValues(h.ns, "metered"))
		case "held":
			return testutil.ToFloat64(lockHeld.WithLabelValues(h.ns, "metered"))
		case "fence":
			return testutil.ToFloat64(lockFenceHighWater.WithLabelValues(h.ns, "metered"))
		default:
			return testutil.ToFloat64(lockHolderSince.WithLabelValues(h.ns, "metered"))
		}
	}
	h.eventually("ready 1, held 0", func() error {
		if gauge("ready") != 1 || gauge("held") != 0 || gauge("since") != 0 {
			return fmt.Errorf("ready %v held %v since %v", gauge("ready"), gauge("held"), gauge("since"))
		}
		return nil
	})

	locker := newLocker(t, srv.Client(t), lock.WithIdentity("metered-pod"), lock.WithTTL(30*time.Second))
	lease, err := locker.TryAcquire(h.ctx(), dl.Status.Key)
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("metered", "the holder observed", holderIs("metered-pod", lease.Fence()))
	h.eventually("held 1 with the fence and since", func() error {
		if gauge("held") != 1 || gauge("fence") != float64(lease.Fence()) || gauge("since") < float64(time.Now().Add(-time.Minute).Unix()) {
			return fmt.Errorf("held %v fence %v (want %d) since %v", gauge("held"), gauge("fence"), lease.Fence(), gauge("since"))
		}
		return nil
	})
	if err := lease.Release(h.ctx()); err != nil {
		t.Fatal(err)
	}

	if err := h.c.Delete(h.ctx(), dl); err != nil {
		t.Fatal(err)
	}
	h.eventually("the series deleted with the lock", func() error {
		for _, g := range []*prometheus.GaugeVec{lockReady, lockHeld, lockFenceHighWater, lockHolderSince} {
			if hasSeries(t, g, h.ns, "metered") {
				return errors.New("a series of the deleted lock is still exported")
			}
		}
		return nil
	})
}

// hasSeries reports whether g exports a series for the lock ns/name,
// without creating one.
func hasSeries(t *testing.T, g *prometheus.GaugeVec, ns, name string) bool {
	t.Helper()
	for _, labels := range seriesLabels(t, g) {
		if labels["namespace"] == ns && labels["name"] == name {
			return true
		}
	}
	return false
}

// seriesLabels are the labels of every series g exports.
func seriesLabels(t *testing.T, g *prometheus.GaugeVec) []map[string]string {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() { g.Collect(ch); close(ch) }()
	var out []map[string]string
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Error(err)
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out = append(out, labels)
	}
	return out
}

// TestConditionMetrics: each lock's conditions are series an alert can
// select on (redlease_distributedlock_condition), following its status: a
// server with an evicting policy shows Preflight False with reason
// EvictionPolicyUnsafe while Ready stays True (the Ready True series and no
// Ready False one); the server stopped, Ready False replaces Ready True;
// the lock deleted, its series go.
func TestConditionMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	lru := redistest.StartStandalone(t, redistest.WithConfig("--maxmemory-policy", "allkeys-lru"))
	h.create("conditioned", standaloneSpec(lru.Addr()))
	nn := types.NamespacedName{Namespace: h.ns, Name: "conditioned"}
	h.eventually("Preflight False (EvictionPolicyUnsafe) and Ready True as series", func() error {
		s := conditionSeries(t, lockConditions, nn)
		if s[v1alpha1.ConditionPreflight] != (conditionLabels{"False", v1alpha1.ReasonEvictionPolicyUnsafe}) || s[v1alpha1.ConditionReady].status != "True" {
			return fmt.Errorf("series %v", s)
		}
		return nil
	})
	lru.Kill()
	h.eventually("Ready False replaces Ready True", func() error {
		if s := conditionSeries(t, lockConditions, nn); s[v1alpha1.ConditionReady].status != "False" {
			return fmt.Errorf("series %v", s)
		}
		return nil
	})
	var dl v1alpha1.DistributedLock
	if err := h.c.Get(h.ctx(), nn, &dl); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx(), &dl); err != nil {
		t.Fatal(err)
	}
	h.eventually("the series deleted with the lock", func() error {
		if s := conditionSeries(t, lockConditions, nn); len(s) > 0 {
			return fmt.Errorf("series of the deleted lock: %v", s)
		}
		return nil
	})
}

// conditionSeries are nn's condition series in g, by condition type; it
// fails the test when one type has two (a change left the old series).
func conditionSeries(t *testing.T, g *conditionGauge, nn types.NamespacedName) map[string]conditionLabels {
	t.Helper()
	out := map[string]conditionLabels{}
	for _, labels := range seriesLabels(t, g.vec) {
		if labels["namespace"] != nn.Namespace || labels["name"] != nn.Name {
			continue
		}
		if _, dup := out[labels["condition"]]; dup {
			t.Errorf("two series for %s's condition %s", nn, labels["condition"])
		}
		out[labels["condition"]] = conditionLabels{labels["status"], labels["reason"]}
	}
	return out
}

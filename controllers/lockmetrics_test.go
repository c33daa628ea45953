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
	ch := make(chan prometheus.Metric)
	go func() { g.Collect(ch); close(ch) }()
	found := false
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
		found = found || labels["namespace"] == ns && labels["name"] == name
	}
	return found
}

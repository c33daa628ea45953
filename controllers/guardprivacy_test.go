/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestSettingsConflictNamesNoOtherRequester: two tenants' inline locks, in
// two namespaces, ask one master for different replica guards. Each reports
// SettingsConflict, and what each can read (its status, its Events) counts
// the other requester without naming it: neither the other lock's name nor
// its namespace appears. A note that listed the other requesters would tell
// a tenant which locks another namespace keeps on the same server.
func TestSettingsConflictNamesNoOtherRequester(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	group := redistest.StartReplicated(t, 2)
	tenants := []struct{ ns, name string }{{h.ns, "payroll-migration"}, {h.extra[0], "acquisition-talks"}}
	for i, tn := range tenants {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: tn.name},
			Spec: replicatedSpec(int32(i+1), 7*time.Second, group.Master.Addr())}
		if err := h.c.Create(h.ctx(), dl); err != nil {
			t.Fatal(err)
		}
	}
	for i, tn := range tenants {
		other := tenants[1-i]
		dl := h.waitForIn(tn.ns, tn.name, "SettingsConflict", func(dl *v1alpha1.DistributedLock) error {
			return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonSettingsConflict)
		})
		if msg := condition(dl, v1alpha1.ConditionReplicationGuarded).Message; !strings.Contains(msg, "1 other requester(s)") {
			t.Errorf("%s: ReplicationGuarded says %q, want the other requester counted", tn.name, msg)
		}
		status, err := yaml.Marshal(dl.Status)
		if err != nil {
			t.Fatal(err)
		}
		var readable map[string]string // what the tenant can read about its lock, by where
		h.eventually(tn.name+"'s SettingsConflict Event", func() error {
			var list eventsv1.EventList
			if err := h.c.List(h.ctx(), &list, client.InNamespace(tn.ns)); err != nil {
				return err
			}
			readable = map[string]string{"status": string(status)}
			conflict := false
			for _, e := range list.Items {
				if e.Regarding.Name == tn.name {
					readable["Event "+e.Reason] += e.Note
					conflict = conflict || e.Reason == v1alpha1.ReasonSettingsConflict
				}
			}
			if !conflict {
				return errNotYet
			}
			return nil
		})
		for where, text := range readable {
			for _, word := range []string{other.name, other.ns} {
				if strings.Contains(text, word) {
					t.Errorf("%s/%s's %s names the other tenant's %q", tn.ns, tn.name, where, word)
				}
			}
		}
	}
}

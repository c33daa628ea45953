package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// The Ready counts behind redlease_controller_locks follow every change of
// the locks' state: new, Ready, not Ready, re-created under the same name
// (a new UID), deleted.
func TestStateStoreCountsFollowEveryChange(t *testing.T) {
	s := newStateStore()
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	steps := []struct {
		what          string
		do            func()
		ready, others int
	}{
		{"a seen", func() { s.get(a, "a1") }, 0, 1},
		{"b seen", func() { s.get(b, "b1") }, 0, 2},
		{"a Ready", func() { s.setReady(a, true) }, 1, 1},
		{"a Ready again", func() { s.setReady(a, true) }, 1, 1},
		{"b Ready", func() { s.setReady(b, true) }, 2, 0},
		{"b not Ready", func() { s.setReady(b, false) }, 1, 1},
		{"a re-created", func() { s.get(a, "a2") }, 0, 2},
		{"a Ready", func() { s.setReady(a, true) }, 1, 1},
		{"a deleted", func() { s.remove(a) }, 0, 1},
		{"a deleted again", func() { s.remove(a) }, 0, 1},
		{"gone a set Ready", func() { s.setReady(a, true) }, 0, 1},
		{"b deleted", func() { s.remove(b) }, 0, 0},
	}
	for _, st := range steps {
		st.do()
		if ready, others := s.counts(); ready != st.ready || others != st.others {
			t.Fatalf("after %s: %d Ready, %d not; want %d and %d", st.what, ready, others, st.ready, st.others)
		}
	}
}

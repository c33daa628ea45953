/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
)

// TestLockWaitingFromTheLine: status.waiting keeps the count and the
// oldest start to the second the API server stores (a finer time would
// rewrite the status on every read), shows no start without waiters, and
// is absent when the line was not read.
func TestLockWaitingFromTheLine(t *testing.T) {
	oldest := time.Date(2026, 12, 5, 12, 0, 7, 654321000, time.UTC)
	second := metav1.NewTime(time.Date(2026, 12, 5, 12, 0, 7, 0, time.UTC))
	tests := []struct {
		name string
		line *protocol.Line
		want *v1alpha1.LockWaiting
	}{
		{"not read", nil, nil},
		{"nobody waits", &protocol.Line{}, &v1alpha1.LockWaiting{}},
		{"waiters", &protocol.Line{Count: 3, Oldest: oldest}, &v1alpha1.LockWaiting{Count: 3, OldestSince: &second}},
		{"only arrivals lost", &protocol.Line{Count: 1}, &v1alpha1.LockWaiting{Count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lockWaiting(tt.line)
			switch {
			case (got == nil) != (tt.want == nil):
				t.Fatalf("got %+v, want %+v", got, tt.want)
			case got == nil:
			case got.Count != tt.want.Count || (got.OldestSince == nil) != (tt.want.OldestSince == nil):
				t.Fatalf("got %+v, want %+v", got, tt.want)
			case got.OldestSince != nil && !got.OldestSince.Equal(tt.want.OldestSince):
				t.Fatalf("oldest since %v, want %v", got.OldestSince, tt.want.OldestSince)
			}
		})
	}
}

// TestAWaitingChangeIsNotUrgent: a line that grows or shrinks is written
// at the status cadence, like a holder change (busy locks would otherwise
// write on every reconcile), and it is a change the store's batched read
// tells the lock about.
func TestAWaitingChangeIsNotUrgent(t *testing.T) {
	prev := &v1alpha1.DistributedLockStatus{Waiting: &v1alpha1.LockWaiting{Count: 1}}
	next := &v1alpha1.DistributedLockStatus{Waiting: &v1alpha1.LockWaiting{Count: 2}}
	if statusUrgent(prev, next, &round{}) {
		t.Error("a waiting count change is written at once")
	}
	a := protocol.Holder{Line: &protocol.Line{Count: 1}}
	b := protocol.Holder{Line: &protocol.Line{Count: 2}}
	if !holderMoved(a, b) {
		t.Error("a waiting count change is not a change of the key")
	}
	if holderMoved(a, protocol.Holder{Line: &protocol.Line{Count: 1, Now: time.Now()}}) {
		t.Error("the server's clock alone is a change of the key")
	}
}

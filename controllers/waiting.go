package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
)

// lineOf is the waiting line the reads report: the master's. Redlock has
// no line (it would need a quorum of its own), so nil there.
func lineOf(reads []holderRead, redlock bool) *protocol.Line {
	if redlock || len(reads) != 1 {
		return nil
	}
	return reads[0].h.Line
}

// lockWaiting is status.waiting for the line l (nil: not read). The
// oldest wait's start is rounded down to the second, as the API server
// keeps it: a finer time would differ from the stored one on every read
// and rewrite the status for nothing.
func lockWaiting(l *protocol.Line) *v1alpha1.LockWaiting {
	if l == nil {
		return nil
	}
	w := &v1alpha1.LockWaiting{Count: clampInt32(l.Count)}
	if l.Count > 0 && !l.Oldest.IsZero() {
		since := metav1.NewTime(l.Oldest.Truncate(time.Second))
		w.OldestSince = &since
	}
	return w
}

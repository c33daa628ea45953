package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestDeletion: deleting a lock leaves Redis alone (the live lease and the
// fence counter stay), an Event on the deleted object says so, and the
// lock's pooled client is closed once no lock uses it.
func TestDeletion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	dl := h.create("doomed", standaloneSpec(srv.Addr()))
	if len(dl.Finalizers) != 0 {
		t.Errorf("finalizers %v", dl.Finalizers)
	}
	locker := newLocker(t, srv.Client(t), lock.WithIdentity("survivor"), lock.WithTTL(20*time.Second))
	key := protocol.DefaultKey(h.ns, "doomed")
	lease, err := locker.TryAcquire(h.ctx(), key)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	h.waitFor("doomed", "the holder observed", holderIs("survivor", lease.Fence()))
	if h.pool.Len() != 1 {
		t.Errorf("%d pooled clients, want 1", h.pool.Len())
	}

	if err := h.c.Delete(h.ctx(), dl); err != nil {
		t.Fatal(err)
	}
	ev := h.waitEvent("doomed", corev1.EventTypeNormal, v1alpha1.ReasonDeleted)
	if !strings.Contains(ev.Note, "left alone") {
		t.Errorf("Event note %q", ev.Note)
	}
	h.eventually("the pooled client closed", func() error {
		if n := h.pool.Len(); n != 0 {
			return fmt.Errorf("%d pooled clients", n)
		}
		return nil
	})
	rc := srv.Client(t)
	if n, err := rc.Exists(h.ctx(), key, protocol.FenceKey(key)).Result(); err != nil || n != 2 {
		t.Errorf("after the deletion EXISTS lock key and fence counter = %d, %v; want both kept", n, err)
	}
	if err := lease.Renew(h.ctx()); err != nil {
		t.Errorf("the live lease cannot renew after the deletion: %v", err)
	}
}

package controllers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// newLocker is the shared lease helper.
var newLocker = locktest.New

// releaseAtEnd is the shared lease helper.
var releaseAtEnd = locktest.ReleaseAtEnd

func holderIs(identity string, fence uint64) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		h := dl.Status.Holder
		switch {
		case h == nil:
			return errors.New("no holder in status")
		case h.Identity != identity || h.Fence != clampInt64(fence):
			return fmt.Errorf("holder %s fence %d, want %s fence %d", h.Identity, h.Fence, identity, fence)
		case h.Since.IsZero():
			return errors.New("holder.since is not set")
		case dl.Status.FenceHighWater < clampInt64(fence):
			return fmt.Errorf("fenceHighWater %d below the holder's fence %d", dl.Status.FenceHighWater, fence)
		}
		return nil
	}
}

// TestHolder: while a pkg/lock lease is held, status names its identity and
// fence; the lock value appears nowhere: not in the object, not in its
// Events, not in the manager's logs. After the release the holder goes.
func TestHolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.create("held", standaloneSpec(srv.Addr()))
	h.waitFor("held", "Ready", isReady)

	locker := newLocker(t, srv.Client(t), lock.WithIdentity("settle-7f9c-x2"), lock.WithTTL(10*time.Second))
	lease, err := locker.TryAcquire(h.ctx(), protocol.DefaultKey(h.ns, "held"))
	if err != nil {
		t.Fatal(err)
	}
	dl := h.waitFor("held", "the holder in status", holderIs("settle-7f9c-x2", lease.Fence()))
	since := dl.Status.Holder.Since

	value := lease.Value()
	secret := value[strings.LastIndexByte(value, '/')+1:] // the random part alone
	raw, err := json.Marshal(dl)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Errorf("the lock value appears in the DistributedLock: %s", raw)
	}
	// Events come with transitions (a first Ready has none): a server
	// that stops answering and comes back, while the lease is held, makes
	// two, a Warning and a Normal.
	srv.Pause()
	h.waitFor("held", "not Ready while the server is paused", func(dl *v1alpha1.DistributedLock) error {
		if isReady(dl) == nil {
			return errNotYet
		}
		return nil
	})
	srv.Resume()
	h.waitFor("held", "Ready again, the holder still in status", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return holderIs("settle-7f9c-x2", lease.Fence())(dl)
	})
	// Let a few more reconciles run (and log) while the lease is held.
	c := h.counter("held")
	n := c.Load()
	h.eventually("three more reconciles", func() error {
		if c.Load() < n+3 {
			return errNotYet
		}
		return nil
	})
	var evs eventsv1.EventList
	if err := h.c.List(h.ctx(), &evs, client.InNamespace(h.ns)); err != nil {
		t.Fatal(err)
	}
	rawEvents, _ := json.Marshal(evs)
	if len(evs.Items) < 2 {
		t.Errorf("%d Events recorded, want the Warning and the Normal of the pause: the search below proves too little", len(evs.Items))
	}
	if strings.Contains(string(rawEvents), secret) {
		t.Errorf("the lock value appears in an Event")
	}
	logs := h.logs.text() + globalLogs.text()
	if !strings.Contains(logs, "observed") {
		t.Errorf("the captured logs miss the reconciler's lines: the search below proves nothing")
	}
	if strings.Contains(logs, secret) {
		t.Errorf("the lock value appears in the manager's logs")
	}

	// The same holder renewing keeps its since.
	dl = h.waitFor("held", "holder unchanged", holderIs("settle-7f9c-x2", lease.Fence()))
	if !dl.Status.Holder.Since.Equal(&since) {
		t.Errorf("holder.since moved from %v to %v while the same holder renewed", since, dl.Status.Holder.Since)
	}

	if err := lease.Release(h.ctx()); err != nil {
		t.Fatal(err)
	}
	dl = h.waitFor("held", "no holder after the release", func(dl *v1alpha1.DistributedLock) error {
		if dl.Status.Holder != nil {
			return fmt.Errorf("holder %+v", dl.Status.Holder)
		}
		return nil
	})
	if dl.Status.FenceHighWater != clampInt64(lease.Fence()) {
		t.Errorf("fenceHighWater %d, want the last fence %d", dl.Status.FenceHighWater, lease.Fence())
	}
}

// TestFenceFloor: a fence counter set below fenceHighWater from outside is
// raised back by the controller (FenceFloorRaised Event), and the next
// lease's fence is above every fence handed out before.
func TestFenceFloor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	srv := redistest.StartStandalone(t)
	h.create("floor", standaloneSpec(srv.Addr()))
	key := protocol.DefaultKey(h.ns, "floor")
	rc := srv.Client(t)
	locker := newLocker(t, rc, lock.WithIdentity("writer"), lock.WithTTL(10*time.Second))

	var seen []uint64
	for range 2 {
		lease, err := locker.TryAcquire(h.ctx(), key)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, lease.Fence())
		h.waitFor("floor", "the lease's fence observed", holderIs("writer", lease.Fence()))
		if err := lease.Release(h.ctx()); err != nil {
			t.Fatal(err)
		}
	}
	top := max(seen[0], seen[1])

	// A failover that lost increments, or a clock that went back.
	if err := rc.Set(h.ctx(), protocol.FenceKey(key), "5", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ev := h.waitEvent("floor", corev1.EventTypeWarning, v1alpha1.ReasonFenceFloorRaised)
	t.Logf("Event: %s", ev.Note)
	h.eventually("the counter raised", func() error {
		v, err := rc.Get(h.ctx(), protocol.FenceKey(key)).Result()
		if err != nil {
			return err
		}
		if n, _ := strconv.ParseUint(v, 10, 64); n < top {
			return fmt.Errorf("counter %d below %d", n, top)
		}
		return nil
	})
	lease, err := locker.TryAcquire(h.ctx(), key)
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	if lease.Fence() <= top {
		t.Errorf("next fence %d is not above every fence seen %v", lease.Fence(), seen)
	}
	h.waitFor("floor", "the new lease observed", holderIs("writer", lease.Fence()))
}

// TestIdleReconcilesDoNotWrite: with a short probe interval and a holder
// renewing its lease, reconciles keep running but the object is not
// written: its resourceVersion stays the same.
func TestIdleReconcilesDoNotWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{probeInterval: 300 * time.Millisecond})
	srv := redistest.StartStandalone(t)
	h.create("idle", standaloneSpec(srv.Addr()))
	locker := newLocker(t, srv.Client(t), lock.WithIdentity("renewer"), lock.WithTTL(time.Second))
	lease, err := locker.TryAcquire(h.ctx(), protocol.DefaultKey(h.ns, "idle"))
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lease)
	dl := h.waitFor("idle", "Ready with the holder", func(dl *v1alpha1.DistributedLock) error {
		if err := isReady(dl); err != nil {
			return err
		}
		return holderIs("renewer", lease.Fence())(dl)
	})
	rv := dl.ResourceVersion
	c := h.counter("idle")
	start := c.Load()
	deadline := time.Now().Add(4 * time.Second) // about 12 probe intervals, 4 renewals
	for time.Now().Before(deadline) {
		got, err := h.get("idle")
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != rv {
			raw, _ := json.Marshal(got.Status)
			t.Fatalf("resourceVersion moved from %s to %s on an idle lock; status now %s", rv, got.ResourceVersion, raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lease.Err() != nil {
		t.Fatalf("the lease ended: %v", lease.Err())
	}
	if n := c.Load() - start; n < 5 {
		t.Errorf("only %d reconciles in 4s with a 300ms probe interval: the idle check proves little", n)
	} else {
		t.Logf("%d reconciles, no write", n)
	}
}

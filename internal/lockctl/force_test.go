package lockctl_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// forceCase is one way the stuck holder's key is freed in
// TestForceKeepsTheOldHoldersLateWriteOut.
type forceCase struct {
	name string
	// back sets the fence counter this far below the stuck holder's fence
	// before the key is freed (the counter lost its last increments: an
	// asynchronous failover, a restart from an older snapshot); 0 leaves
	// it alone.
	back uint64
	// free frees key, held by the stuck holder with fence f.
	free func(t *testing.T, srv *redistest.Server, key string, f uint64)
	// naive: the old holder's late write is expected to be accepted.
	naive bool
}

// TestForceKeepsTheOldHoldersLateWriteOut: a live holder (its watchdog
// renewing) writes through a pkg/fence store, its lock is forced free,
// the next holder takes it with a greater fence and writes, and the old
// holder's late write is refused (fence.ErrStale). With `lockctl release
// --redis --now` on an intact counter; with protocol.Force given the
// highest fence seen as its floor (as the controller passes
// status.fenceHighWater) after the counter went back. The naive variant
// (a plain DEL after the counter went back) hands the next holder a
// fence below the old one, and the store accepts the old holder's late
// write after the next holder's: the checker catches it.
func TestForceKeepsTheOldHoldersLateWriteOut(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cases := []forceCase{
		{name: "lockctl --now", free: func(t *testing.T, srv *redistest.Server, key string, _ uint64) {
			r := lockctl(t, "release", "--redis", redisURL(srv), "--key", key, "--now", "--by", "oncall")
			if r.code != 0 || !strings.Contains(r.stdout, "forced "+key+" free: holder stuck-job:1") {
				t.Fatalf("release --now: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		}},
		{name: "force with a floor after the counter went back", back: 2, free: func(t *testing.T, srv *redistest.Server, key string, f uint64) {
			run := protocol.NewCaller(protocol.FunctionsAuto).On(srv.Client(t))
			b, err := protocol.Force(t.Context(), run, key, protocol.BreakGlassArgs{By: "oncall", Floor: f})
			if err != nil || !b.Done || b.Raised <= f {
				t.Fatalf("force = %+v, %v; want done with the counter raised above %d", b, err, f)
			}
		}},
		{name: "naive DEL after the counter went back", back: 2, naive: true, free: func(t *testing.T, srv *redistest.Server, key string, _ uint64) {
			srv.Client(t).Del(t.Context(), key)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { forceLateWrite(t, srv, c) })
	}
}

func forceLateWrite(t *testing.T, srv *redistest.Server, c forceCase) {
	opts := []lock.Option{lock.WithTTL(30 * time.Second), lock.WithRenewInterval(time.Second), lock.WithFencing(true)}
	stuck := locktest.New(t, srv.Client(t), append(opts, lock.WithIdentity("stuck-job:1"))...)
	next := locktest.New(t, srv.Client(t), append(opts, lock.WithIdentity("next-job:1"))...)
	store := fence.NewRedisStore(srv.Client(t), "store:"+c.name+":")
	key := "forced-" + strconv.FormatUint(c.back, 10) + strconv.FormatBool(c.naive)
	old, err := stuck.TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Release(context.Background()) }()
	if c.back == 0 {
		// The stuck holder wrote before it got stuck.
		if err := store.Write(t.Context(), "account", old.Fence(), "stuck: first"); err != nil {
			t.Fatal(err)
		}
	} else {
		srv.Client(t).Set(t.Context(), protocol.FenceKey(key), strconv.FormatUint(old.Fence()-c.back, 10), 0)
	}
	start, l2 := freeAndTakeNext(t, srv, c, key, old.Fence(), next)
	if l2 == nil {
		return
	}
	if !c.naive {
		t.Logf("MEASURE force %s: request to the next holder %v", c.name, time.Since(start).Round(time.Millisecond))
	}
	defer func() { _ = l2.Release(context.Background()) }()
	if err := old.Context().Err(); err != nil {
		t.Fatalf("the forced holder's lease already ended (%v): the test needs it still running", err)
	}
	if err := store.Write(t.Context(), "account", l2.Fence(), "next"); err != nil && !c.naive {
		t.Fatalf("the next holder's write (fence %d, old %d): %v", l2.Fence(), old.Fence(), err)
	}
	late := store.Write(t.Context(), "account", old.Fence(), "stuck: late")
	switch {
	case c.naive && l2.Fence() < old.Fence() && late == nil:
		t.Logf("naive variant caught: next fence %d ≤ old %d, the old holder's late write accepted after the next holder's", l2.Fence(), old.Fence())
	case c.naive:
		t.Fatalf("the naive DEL showed nothing (next fence %d, old %d, late write %v): the test cannot tell force from it", l2.Fence(), old.Fence(), late)
	case l2.Fence() <= old.Fence():
		t.Fatalf("next fence %d, forced holder's %d", l2.Fence(), old.Fence())
	case !errors.Is(late, fence.ErrStale):
		t.Fatalf("the forced holder's late write = %v, want fence.ErrStale", late)
	}
}

// freeAndTakeNext frees key with c.free while next waits for it in the
// line (a naive DEL says nothing to the line: next tries once after it),
// and returns when the request was made and next's lease.
func freeAndTakeNext(t *testing.T, srv *redistest.Server, c forceCase, key string, f uint64, next *lock.Locker) (time.Time, *lock.Lease) {
	if c.naive {
		start := time.Now()
		c.free(t, srv, key, f)
		l, err := next.TryAcquire(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		return start, l
	}
	granted := make(chan *lock.Lease, 1)
	go func() {
		l, err := next.Acquire(t.Context(), key)
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	time.Sleep(200 * time.Millisecond) // next waits in the line
	start := time.Now()
	c.free(t, srv, key, f)
	return start, <-granted
}

package lockctl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// TestReleaseRevokesALiveHolder: `lockctl release --redis` revokes a
// holder whose watchdog keeps renewing: its lease ends within one renew
// interval, the next holder is granted the key only after the revoked
// key's PX ran out, with a greater fence, and never while the revoked
// lease still claimed validity. The naive variant (a plain DEL) lets the
// next holder in while the first still claims validity: the overlap the
// revoke avoids.
func TestReleaseRevokesALiveHolder(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const ttl, renew = 2 * time.Second, 400 * time.Millisecond
	opts := []lock.Option{lock.WithTTL(ttl), lock.WithRenewInterval(renew), lock.WithFencing(true)}
	stuck := locktest.New(t, srv.Client(t), append(opts, lock.WithIdentity("stuck-job:1"))...)
	next := locktest.New(t, srv.Client(t), append(opts, lock.WithIdentity("next-job:1"))...)
	for _, naive := range []bool{false, true} {
		key := "revoke"
		if naive {
			key = "naive"
		}
		lease, err := stuck.TryAcquire(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		pttl, lost := "", time.Time{}
		if naive {
			srv.Client(t).Del(t.Context(), key)
		} else {
			r := lockctl(t, "release", "--redis", redisURL(srv), "--key", key, "--by", "oncall")
			if r.code != 0 || !strings.Contains(r.stdout, "revoked holder stuck-job:1") {
				t.Fatalf("release: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if _, in, ok := strings.Cut(r.stdout, "(in "); ok {
				pttl = strings.TrimSuffix(strings.TrimSpace(in), ")")
			}
			select {
			case <-lease.Done():
				lost = time.Now()
			case <-time.After(renew + time.Second):
				t.Fatal("the revoked lease did not end within a renew interval")
			}
		}
		for {
			l2, err := next.TryAcquire(t.Context(), key)
			if err == nil {
				checkNextGrant(t, naive, lease, l2, time.Since(revoked), ttl-renew-200*time.Millisecond)
				if !naive {
					t.Logf("MEASURE revoke (TTL %v, renew %v): request to the next holder %v; the key's PTTL at the revoke %s; the lease ended lost after %v",
						ttl, renew, time.Since(revoked).Round(time.Millisecond), pttl, lost.Sub(revoked).Round(time.Millisecond))
				}
				_ = l2.Release(t.Context())
				break
			}
			if time.Since(revoked) > 2*ttl {
				t.Fatalf("no grant %v after the revoke: %v", 2*ttl, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = lease.Release(t.Context())
	}
}

// checkNextGrant: the next holder's lease l2, granted after the revoke (or
// the naive DEL) of lease, came after the revoked lease's claimed validity
// and at least early after the revoke, with a greater fence; the naive DEL
// must show the overlap.
func checkNextGrant(t *testing.T, naive bool, lease, l2 *lock.Lease, after, early time.Duration) {
	t.Helper()
	overlap := lease.ValidUntil().After(time.Now())
	switch {
	case naive && !overlap:
		t.Fatal("the naive DEL showed no overlap: the test cannot tell revoke from it")
	case !naive && overlap:
		t.Fatalf("granted at %v while the revoked lease claimed validity until %v", time.Now(), lease.ValidUntil())
	case !naive && after < early:
		t.Fatalf("granted %v after the revoke, before the revoked key's PX ran out", after)
	case l2.Fence() <= lease.Fence():
		t.Fatalf("next fence %d, revoked %d", l2.Fence(), lease.Fence())
	}
}

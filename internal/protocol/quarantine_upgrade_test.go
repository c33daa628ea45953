package protocol_test

import (
	_ "embed"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The last protocol-4 lock scripts as released (each with the pieces
// prepended to it): what a client not yet upgraded to protocol 5 runs.
var (
	//go:embed testdata/v4/acquire.lua
	v4AcquireSrc string
	//go:embed testdata/v4/release.lua
	v4ReleaseSrc string
	//go:embed testdata/v4/renew.lua
	v4RenewSrc string
	v4Acquire  = redis.NewScript(v4AcquireSrc)
	v4Release  = redis.NewScript(v4ReleaseSrc)
	v4Renew    = redis.NewScript(v4RenewSrc)
)

// Protocol-4 and protocol-5 clients on one key. Without the quarantine,
// hand-offs go both ways, fences keep increasing, and no epoch record is
// written: protocol 5 behaves as protocol 4. With it, a protocol-4 client
// grants during a quarantine the protocol-5 clients keep: the reason the
// quarantine is turned on only once every client runs protocol 5.
func TestProtocol4And5SideBySide(t *testing.T) {
	const key, window = "job", time.Second
	s := newServer(t)
	var fence int64
	take := func(old bool, v string, q protocol.Quarantine) []int64 {
		t.Helper()
		args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: protocol.IdentityFromValue(v),
			Place: time.Minute, Queued: true, Window: window, Quarantine: q}
		var res []int64
		var err error
		if old {
			res, err = v4Acquire.Run(s.ctx, s.c, protocol.AcquireKeys(key)[:4], args.Argv()[:10]...).Int64Slice()
		} else {
			res, err = s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...).Int64Slice()
		}
		s.must(err)
		if res[0] == 1 {
			if res[1] <= fence {
				t.Fatalf("%s took fence %d after %d", v, res[1], fence)
			}
			fence = res[1]
		}
		return res
	}
	give := func(old bool, v string, q protocol.Quarantine) {
		t.Helper()
		var ok bool
		if old {
			n, err := v4Release.Run(s.ctx, s.c, []string{key, protocol.EventsChannel(key), protocol.LineKey(key), protocol.FenceKey(key)},
				v, window.Milliseconds(), "0", "0").Int()
			s.must(err)
			ok = n == 1
		} else {
			var err error
			ok, err = protocol.Release(s.ctx, s.r, key, v, protocol.ReleaseArgs{Window: window, TTL: 10 * time.Second, Quarantine: q})
			s.must(err)
		}
		if !ok {
			t.Fatalf("release by %s: not its key", v)
		}
	}
	holder := func() string {
		v, err := s.c.Get(s.ctx, key).Result()
		if err == redis.Nil {
			return ""
		}
		s.must(err)
		return v
	}
	off := protocol.Quarantine{}

	// Old holder, new waiter; then new holder, old waiter.
	oldA, newB, oldC := "old-pod:1/a", "new-pod:1/b", "old-pod:2/c"
	if res := take(true, oldA, off); res[0] != 1 {
		t.Fatalf("old holder: %v", res)
	}
	if res := take(false, newB, off); res[0] != 0 || len(res) != 3 {
		t.Fatalf("new waiter's attempt = %v, want {0, pttl, counter}", res)
	}
	if n, err := v4Renew.Run(s.ctx, s.c, []string{key}, oldA, 10000).Int(); err != nil || n != 1 {
		t.Fatalf("old renewal = %d, %v", n, err)
	}
	give(true, oldA, off)
	if got := holder(); got != newB {
		t.Fatalf("the old release handed the key to %q, want the new waiter", got)
	}
	if res := take(false, newB, off); res[0] != 1 {
		t.Fatalf("new waiter's confirmation: %v", res)
	}
	if res := take(true, oldC, off); res[0] != 0 {
		t.Fatalf("old waiter took a held key: %v", res)
	}
	give(false, newB, off)
	if got := holder(); got != oldC {
		t.Fatalf("the new release handed the key to %q, want the old waiter", got)
	}
	if res := take(true, oldC, off); res[0] != 1 {
		t.Fatalf("old waiter's confirmation: %v", res)
	}
	give(true, oldC, off)
	if n, err := s.c.Exists(s.ctx, protocol.EpochKey(key)).Result(); err != nil || n != 0 {
		t.Fatalf("an epoch record without the quarantine: EXISTS = %d, %v", n, err)
	}

	// A quarantine the protocol-5 clients keep and a protocol-4 client
	// does not know.
	q := protocol.Quarantine{On: true, Cutoff: time.Second}
	if _, err := protocol.RecordEpoch(s.ctx, s.r, key, 10*time.Second, q); err != nil {
		t.Fatal(err)
	}
	s.must(s.c.HSet(s.ctx, protocol.EpochKey(key), "run", "promoted-elsewhere").Err())
	if res := take(false, "new-pod:1/d", q); res[0] != 0 || len(res) != 4 {
		t.Fatalf("new client during the quarantine: %v, want held back", res)
	}
	if res := take(true, "old-pod:1/e", off); res[0] != 1 {
		t.Fatalf("old client during the quarantine: %v: expected the documented unsafe grant", res)
	}
	t.Log("observed: a protocol-4 client grants during a quarantine (documented: turn it on once every client runs protocol 5)")
}

package protocol_test

import (
	_ "embed"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The protocol-3 lock scripts as first released, which read the key with a
// plain GET: what a client not yet upgraded runs beside revised ones.
var (
	//go:embed testdata/v3-0/acquire.lua
	v30AcquireSrc string
	//go:embed testdata/v3-0/release.lua
	v30ReleaseSrc string
	//go:embed testdata/v3-0/renew.lua
	v30RenewSrc string
	v30Acquire  = redis.NewScript(v30AcquireSrc)
	v30Release  = redis.NewScript(v30ReleaseSrc)
	v30Renew    = redis.NewScript(v30RenewSrc)
)

// A lock client of the first protocol-3 release meets a semaphore on its
// key (docs/protocol.md, "Locks and semaphores on one key"): its first
// attempt reads the key as held and queues, but every script that reads
// the value fails with WRONGTYPE — its queued attempt (the waiter stops
// waiting with that error), its release (a waiter giving up keeps its
// place until the line expires) and its renewal (the lease ends at its
// local deadline instead of at once) — and none of them takes or changes
// the semaphore: exclusion holds, liveness does not. The revised scripts
// wait, leave the line and report the lease lost.
func TestUnrevisedLockScriptsBesideASemaphore(t *testing.T) {
	s := newServer(t)
	const key = "kinds"
	holder := value(t, "sem:1")
	ok, f := s.permit(key, holder, 2, false)
	s.took(ok, f, "the semaphore's holder")

	old := value(t, "old-pod:1")
	args := protocol.AcquireArgs{Value: old, TTL: 10 * time.Second, Fencing: true, Identity: "old-pod:1",
		Place: time.Minute, Window: time.Second}
	res, err := ints(v30Acquire.Run(s.ctx, s.c, protocol.AcquireKeys(key), args.Argv()...))
	s.must(err)
	expect(t, res[0], 0, "the unrevised first attempt acquired")
	args.Queued = true
	wrongType(t, "the unrevised queued attempt", v30Acquire.Run(s.ctx, s.c, protocol.AcquireKeys(key), args.Argv()...).Err())
	releaseKeys := []string{key, protocol.EventsChannel(key), protocol.LineKey(key)}
	wrongType(t, "the unrevised release", v30Release.Run(s.ctx, s.c, releaseKeys, old, 1000, "0", "0").Err())
	expect(t, s.c.ZCard(s.ctx, protocol.LineKey(key)).Val(), 1, "places in the lock's line after the unrevised release")
	wrongType(t, "the unrevised renewal", v30Renew.Run(s.ctx, s.c, []string{key}, old, 10000).Err())

	// The revised scripts, on the same key and line.
	ok, ms := s.take(key, old, true)
	expect(t, ok, false, "the revised queued attempt acquired")
	if ms <= 9000 || ms > 10000 {
		t.Fatalf("the revised attempt learns %d ms, want the semaphore's last permit's PTTL (about 10 s)", ms)
	}
	expect(t, s.give(key, old, time.Second), false, "the revised release of a key a semaphore holds")
	expect(t, s.c.ZCard(s.ctx, protocol.LineKey(key)).Val(), 0, "places in the lock's line after the revised release")
	n, err := s.run(protocol.RenewScript, []string{key}, old, 10000).Int()
	s.must(err)
	expect(t, n, 0, "the revised renewal of a key a semaphore holds")
	expectHolders(t, s.permits(key), "sem:1")
}

func wrongType(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("%s = %v, want WRONGTYPE", what, err)
	}
}

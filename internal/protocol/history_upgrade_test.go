package protocol_test

import (
	_ "embed"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The last protocol-5 scripts as released (each with the pieces prepended
// to it): what a client not yet upgraded to protocol 6 runs.
var (
	//go:embed testdata/v5/acquire.lua
	v5AcquireSrc string
	//go:embed testdata/v5/release.lua
	v5ReleaseSrc string
	//go:embed testdata/v5/permit_acquire.lua
	v5PermitAcquireSrc string
	//go:embed testdata/v5/permit_release.lua
	v5PermitReleaseSrc string
	v5Acquire          = redis.NewScript(v5AcquireSrc)
	v5Release          = redis.NewScript(v5ReleaseSrc)
	v5PermitAcquire    = redis.NewScript(v5PermitAcquireSrc)
	v5PermitRelease    = redis.NewScript(v5PermitReleaseSrc)
)

// mixedKey is one key that clients of the previous protocol (old) and of
// the current one share, a lock's or (permits > 0) a semaphore's; it fails
// the test when a fence does not increase.
type mixedKey struct {
	*server
	old     oldClient
	key     string
	permits int
	fence   int64
	// q is the failover quarantine every call passes (off: the zero
	// value), ttl every lease's TTL (0: 10 s).
	q   protocol.Quarantine
	ttl time.Duration
}

func (m *mixedKey) leaseTTL() time.Duration {
	if m.ttl == 0 {
		return 10 * time.Second
	}
	return m.ttl
}

// releaseArgs are every release's arguments besides the key and value.
func (m *mixedKey) releaseArgs() protocol.ReleaseArgs {
	return protocol.ReleaseArgs{Window: mixedWindow, TTL: m.leaseTTL(), Quarantine: m.q}
}

// oldClient runs an older protocol's acquire and release on a mixedKey.
type oldClient struct {
	take func(m *mixedKey, args protocol.AcquireArgs) *redis.Cmd
	give func(m *mixedKey, v string) (int, error)
}

const mixedWindow = time.Second

// take is an acquire by v (queued: it may be in line); it returns the
// reply.
func (m *mixedKey) take(old bool, v string) []int64 {
	m.t.Helper()
	args := protocol.AcquireArgs{Value: v, TTL: m.leaseTTL(), Fencing: true, Identity: protocol.IdentityFromValue(v),
		Place: time.Minute, Queued: true, Window: mixedWindow, Permits: m.permits, Quarantine: m.q}
	var cmd *redis.Cmd
	switch {
	case old:
		cmd = m.old.take(m, args)
	case m.permits > 0:
		cmd = m.run(protocol.AcquirePermitScript, protocol.AcquirePermitKeys(m.key), args.PermitArgv()...)
	default:
		cmd = m.run(protocol.AcquireScript, protocol.AcquireKeys(m.key), args.Argv()...)
	}
	res, err := ints(cmd)
	m.must(err)
	if res[0] == 1 {
		if res[1] <= m.fence {
			m.t.Fatalf("%s took fence %d after %d", v, res[1], m.fence)
		}
		m.fence = res[1]
	}
	return res
}

// give is a release by v, which must hold the key.
func (m *mixedKey) give(old bool, v string) {
	m.t.Helper()
	var n int
	var err error
	a := m.releaseArgs()
	switch {
	case old:
		n, err = m.old.give(m, v)
	case m.permits > 0:
		n, err = boolInt(protocol.ReleasePermit(m.ctx, m.r, m.key, v, m.permits, a))
	default:
		n, err = boolInt(protocol.Release(m.ctx, m.r, m.key, v, a))
	}
	m.must(err)
	if n != 1 {
		m.t.Fatalf("release by %s: not its key", v)
	}
}

func boolInt(ok bool, err error) (int, error) {
	if ok {
		return 1, err
	}
	return 0, err
}

// A hand-off between protocol-5 and protocol-6 clients, both ways, for a
// lock and a semaphore. Protocol 6 names the counter's history in its
// notices; a protocol-6 waiter takes a protocol-5 notice (no history) as
// uncounted, and a protocol-5 waiter reads protocol 6's history where it
// expects a semaphore's live permits, which is no number, and takes the
// notice as uncounted too (its ParseGrant's rule, applied here): each
// confirms first with its own acquire. Every fence is above the one
// before, and a third client of either version is refused what was handed
// over.
func TestProtocol5And6SideBySide(t *testing.T) {
	for _, permits := range []int{0, 2} {
		for _, oldGiver := range []bool{true, false} {
			name := map[bool]string{true: "protocol-5 release, protocol-6 waiter", false: "protocol-6 release, protocol-5 waiter"}[oldGiver]
			if permits > 0 {
				name = "semaphore: " + name
			}
			t.Run(name, func(t *testing.T) {
				s := newServer(t)
				m := &mixedKey{server: s, old: protocol5, key: "job", permits: permits}
				var holders []string
				for i := range max(permits, 1) {
					v := value(t, "holder:"+strconv.Itoa(i))
					expect(t, m.take(oldGiver, v)[0], 1, "a holder")
					holders = append(holders, v)
				}
				waiter := value(t, "waiter:1")
				expect(t, m.take(!oldGiver, waiter)[0], 0, "the waiter's attempt")

				ps := s.c.Subscribe(s.ctx, protocol.EventsChannel(m.key), protocol.WaiterChannel(m.key, "waiter:1"))
				defer func() { _ = ps.Close() }()
				for range 2 {
					_, err := ps.Receive(s.ctx)
					s.must(err)
				}
				m.give(oldGiver, holders[0])
				msg, err := ps.ReceiveMessage(s.ctx)
				s.must(err)
				payload, ok := strings.CutPrefix(msg.Payload, "granted ")
				if !ok {
					t.Fatalf("message %q, want a grant", msg.Payload)
				}
				g := protocol.ParseGrant(payload)
				expect(t, g.Digest, protocol.ValueDigest(waiter), "the notice's waiter")
				if oldGiver {
					expect(t, g.Counted, false, "a protocol-5 notice, read by protocol 6, is counted")
				} else {
					f := strings.Fields(payload)
					_, err := strconv.Atoi(f[4])
					expect(t, len(f) >= 5 && err != nil, true, "protocol 6's fifth field is no number (protocol 5 confirms first)")
				}
				for _, old := range []bool{true, false} {
					expect(t, m.take(old, value(t, "other:1"))[0], 0, "a third client on what was handed over")
				}
				expect(t, m.take(!oldGiver, waiter)[0], 1, "the waiter, confirming")
			})
		}
	}
}

// protocol5 runs the last protocol-5 scripts, which take the same keys
// and arguments as protocol 6's.
var protocol5 = oldClient{
	take: func(m *mixedKey, args protocol.AcquireArgs) *redis.Cmd {
		if m.permits > 0 {
			return v5PermitAcquire.Run(m.ctx, m.c, protocol.AcquirePermitKeys(m.key), args.PermitArgv()...)
		}
		return v5Acquire.Run(m.ctx, m.c, protocol.AcquireKeys(m.key), args.Argv()...)
	},
	give: func(m *mixedKey, v string) (int, error) {
		a := m.releaseArgs()
		if m.permits > 0 {
			keys := []string{m.key, protocol.EventsChannel(m.key), protocol.PermitLineKey(m.key), protocol.HoldersKey(m.key),
				protocol.FenceKey(m.key), protocol.EpochKey(m.key)}
			quarantine := []any{"", "0"}
			if a.Quarantine.On {
				quarantine = []any{protocol.Millis(a.Quarantine.Cutoff), "0"}
			}
			argv := append([]any{v, protocol.Millis(a.Window), "0", m.permits, "0", protocol.Millis(a.TTL)}, quarantine...)
			return v5PermitRelease.Run(m.ctx, m.c, keys, argv...).Int()
		}
		call := protocol.FullReleaseCall(m.key, v, a)
		return v5Release.Run(m.ctx, m.c, call.Keys, call.Args...).Int()
	},
}

// A failover quarantine holds protocol-5 and protocol-6 clients alike, so
// the two may share a key with the quarantine on as they may without it
// (docs/upgrading.md's support window): after a promotion, a holder of
// either version releases without handing the key over, no client of
// either version is granted it, and the waiter of the other version gets
// it once the quarantine has passed. A client that ignored the quarantine
// (as protocol 4's did) fails the "no grant" checks.
func TestAQuarantineHoldsProtocol5And6Alike(t *testing.T) {
	for _, kind := range []quarantineKind{{"lock", 0}, {"semaphore", 1}} {
		for _, oldHolder := range []bool{true, false} {
			name := kind.name + "/" + map[bool]string{true: "protocol-5 holder, protocol-6 waiter", false: "protocol-6 holder, protocol-5 waiter"}[oldHolder]
			t.Run(name, func(t *testing.T) {
				s := newServer(t)
				m := &mixedKey{server: s, old: protocol5, key: "job", permits: kind.permits,
					q: protocol.Quarantine{On: true, Cutoff: 100 * time.Millisecond}, ttl: 400 * time.Millisecond}
				if _, err := protocol.RecordEpoch(s.ctx, s.r, m.key, m.ttl, m.q); err != nil {
					t.Fatal(err)
				}
				holder, waiter := value(t, "holder:1"), value(t, "waiter:1")
				expect(t, m.take(oldHolder, holder)[0], 1, "the holder's acquire")
				// What a promoted replica, to which the holder's key was
				// replicated, finds: a record naming another server.
				s.must(s.c.HSet(s.ctx, protocol.EpochKey(m.key), "run", "promoted-elsewhere").Err())
				expect(t, m.take(!oldHolder, waiter)[0], 0, "the waiter's attempt during the quarantine")
				m.give(oldHolder, holder)
				expect(t, kind.handed(s, m.key, waiter), false, "the key handed over during the quarantine")
				for _, old := range []bool{true, false} {
					expect(t, m.take(old, value(t, "other:1"))[0], 0, "another client's attempt during the quarantine")
				}
				time.Sleep(m.q.Length(m.ttl))
				expect(t, m.take(!oldHolder, waiter)[0], 1, "the waiter's attempt after the quarantine")
			})
		}
	}
}

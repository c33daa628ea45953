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
				m := mixed56{server: s, key: "job", permits: permits}
				var holders []string
				for i := range max(permits, 1) {
					v := value(t, "holder:"+strconv.Itoa(i))
					expect(t, m.take(oldGiver, v, false)[0], 1, "a holder")
					holders = append(holders, v)
				}
				waiter := value(t, "waiter:1")
				expect(t, m.take(!oldGiver, waiter, false)[0], 0, "the waiter's attempt")

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
					expect(t, m.take(old, value(t, "other:1"), false)[0], 0, "a third client on what was handed over")
				}
				expect(t, m.take(!oldGiver, waiter, true)[0], 1, "the waiter, confirming")
			})
		}
	}
}

// mixed56 is one key of protocol-5 (old) and protocol-6 clients; it fails
// the test when a fence does not increase.
type mixed56 struct {
	*server
	key     string
	permits int
	fence   int64
}

func (m *mixed56) take(old bool, v string, queued bool) []int64 {
	m.t.Helper()
	args := protocol.AcquireArgs{Value: v, TTL: 10 * time.Second, Fencing: true, Identity: protocol.IdentityFromValue(v),
		Place: time.Minute, Queued: queued, Window: time.Second, Permits: m.permits}
	var cmd *redis.Cmd
	switch {
	case old && m.permits > 0:
		cmd = v5PermitAcquire.Run(m.ctx, m.c, protocol.AcquirePermitKeys(m.key), args.PermitArgv()...)
	case old:
		cmd = v5Acquire.Run(m.ctx, m.c, protocol.AcquireKeys(m.key), args.Argv()...)
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

func (m *mixed56) give(old bool, v string) {
	m.t.Helper()
	a := protocol.ReleaseArgs{Window: time.Second}
	var ok bool
	var err error
	switch {
	case old && m.permits > 0:
		keys := []string{m.key, protocol.EventsChannel(m.key), protocol.PermitLineKey(m.key), protocol.HoldersKey(m.key),
			protocol.FenceKey(m.key), protocol.EpochKey(m.key)}
		var n int64
		n, err = v5PermitRelease.Run(m.ctx, m.c, keys, v, 1000, "0", m.permits, "0", 0, "", "0").Int64()
		ok = n == 1
	case old:
		call := protocol.FullReleaseCall(m.key, v, a)
		var n int64
		n, err = v5Release.Run(m.ctx, m.c, call.Keys, call.Args...).Int64()
		ok = n == 1
	case m.permits > 0:
		ok, err = protocol.ReleasePermit(m.ctx, m.r, m.key, v, m.permits, a)
	default:
		ok, err = protocol.Release(m.ctx, m.r, m.key, v, a)
	}
	m.must(err)
	expect(m.t, ok, true, "release")
}

package protocol_test

import (
	_ "embed"
	"strconv"
	"strings"
	"testing"

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
				m := &mixedKey{server: s, old: protocol5, key: "job", permits: permits}
				var holders []string
				for i := range max(permits, 1) {
					v := value(t, "holder:"+strconv.Itoa(i))
					expect(t, m.take(oldGiver, v, protocol.Quarantine{})[0], 1, "a holder")
					holders = append(holders, v)
				}
				waiter := value(t, "waiter:1")
				expect(t, m.take(!oldGiver, waiter, protocol.Quarantine{})[0], 0, "the waiter's attempt")

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
					expect(t, m.take(old, value(t, "other:1"), protocol.Quarantine{})[0], 0, "a third client on what was handed over")
				}
				expect(t, m.take(!oldGiver, waiter, protocol.Quarantine{})[0], 1, "the waiter, confirming")
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
		if m.permits > 0 {
			keys := []string{m.key, protocol.EventsChannel(m.key), protocol.PermitLineKey(m.key), protocol.HoldersKey(m.key),
				protocol.FenceKey(m.key), protocol.EpochKey(m.key)}
			return v5PermitRelease.Run(m.ctx, m.c, keys, v, mixedWindow.Milliseconds(), "0", m.permits, "0", 0, "", "0").Int()
		}
		call := protocol.FullReleaseCall(m.key, v, protocol.ReleaseArgs{Window: mixedWindow})
		return v5Release.Run(m.ctx, m.c, call.Keys, call.Args...).Int()
	},
}

package protocol_test

import (
	"embed"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// The last protocol-6 scripts as released: what a client not yet upgraded
// to protocol 7 runs. testdata/v6 holds protocol 6's Lua files as they
// were, the shared pieces once; each script is its pieces, then its body,
// as EVALSHA sent it.
var (
	//go:embed testdata/v6
	v6Files         embed.FS
	v6Acquire       = v6Script("acquire", "fence", "line", "taken", "value", "epoch")
	v6Release       = v6Script("release", "fence", "line", "value", "epoch")
	v6PermitAcquire = v6Script("permit_acquire", "fence", "line", "permits", "taken", "epoch")
	v6PermitRelease = v6Script("permit_release", "fence", "line", "permits", "epoch")
)

// v6Script is protocol 6's script body with the pieces it used prepended.
func v6Script(body string, pieces ...string) *redis.Script {
	var src strings.Builder
	for _, name := range append(pieces, body) {
		b, err := v6Files.ReadFile("testdata/v6/" + name + ".lua")
		if err != nil {
			panic(err)
		}
		src.Write(b)
	}
	return redis.NewScript(src.String())
}

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
	// tickets orders the line by ticket in the current protocol's calls.
	tickets bool
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
		Place: time.Minute, Queued: true, Window: mixedWindow, Permits: m.permits, Quarantine: m.q, Tickets: m.tickets && !old}
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

// A hand-off between protocol-6 and protocol-7 clients, both ways, for a
// lock and a semaphore. The two write the same keys, values, scores and
// notices (protocol 7 changes which commands a script runs, not what it
// writes), so each counts the other's hand-off: the notice names the
// waiter, the counter after the hand-off and its history. Every fence is
// above the one before, a third client of either version is refused what
// was handed over, and the waiter's confirming attempt takes it.
func TestProtocol6And7SideBySide(t *testing.T) {
	for _, permits := range []int{0, 2} {
		for _, oldGiver := range []bool{true, false} {
			name := map[bool]string{true: "protocol-6 release, protocol-7 waiter", false: "protocol-7 release, protocol-6 waiter"}[oldGiver]
			if permits > 0 {
				name = "semaphore: " + name
			}
			t.Run(name, func(t *testing.T) {
				s := newServer(t)
				m := &mixedKey{server: s, old: protocol6, key: "job", permits: permits}
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
				expect(t, g.Counted, true, "the other version's notice is counted")
				expect(t, g.History, s.history(), "the notice's history")
				expect(t, s.counter(m.key), strconv.FormatInt(g.Counter, 10), "the notice's counter")
				for _, old := range []bool{true, false} {
					expect(t, m.take(old, value(t, "other:1"))[0], 0, "a third client on what was handed over")
				}
				expect(t, m.take(!oldGiver, waiter)[0], 1, "the waiter, confirming")
			})
		}
	}
}

// Waiters of protocols 6 and 7 on one key are served in the order they
// arrived, however their attempts interleave: protocol 7's waiter trying
// again keeps its place without a new arrival (ZSCORE, where protocol 6
// re-ran ZADD NX with the same effect), and a protocol-7 waiter whose
// place lapsed joins again at the back, behind a protocol-6 waiter that
// arrived after it. For a lock and a semaphore.
func TestAMixedLineKeepsArrivalOrder(t *testing.T) {
	for _, permits := range []int{0, 1} {
		t.Run(map[bool]string{true: "semaphore", false: "lock"}[permits > 0], func(t *testing.T) {
			s := newServer(t)
			m := &mixedKey{server: s, old: protocol6, key: "job", permits: permits}
			holder := value(t, "holder:1")
			expect(t, m.take(false, holder)[0], 1, "the holder")
			first, second, third := value(t, "first:1"), value(t, "second:1"), value(t, "third:1")
			expect(t, m.take(false, first)[0], 0, "protocol 7's first waiter")
			expect(t, m.take(true, second)[0], 0, "protocol 6's second waiter")
			for range 3 { // each tries again, interleaved: no one moves
				expect(t, m.take(true, second)[0], 0, "protocol 6's waiter again")
				expect(t, m.takeFresh(first)[0], 0, "protocol 7's waiter again, the line fresh")
			}
			expect(t, strings.Join(s.lineMembers(m), " "), first+" "+second, "the line after retries")

			// first's place lapses (its line entry is gone); third, of
			// protocol 6, arrives; first tries again and queues at the back.
			s.must(s.c.ZRem(s.ctx, m.lineKey(), first).Err())
			expect(t, m.take(true, third)[0], 0, "protocol 6's third waiter")
			expect(t, m.takeFresh(first)[0], 0, "protocol 7's waiter after its place lapsed")
			expect(t, strings.Join(s.lineMembers(m), " "), second+" "+third+" "+first, "the line after the lapse")
		})
	}
}

// lineKey is m's waiting line: a lock's or a semaphore's.
func (m *mixedKey) lineKey() string {
	if m.permits > 0 {
		return protocol.PermitLineKey(m.key)
	}
	return protocol.LineKey(m.key)
}

// lineMembers is m's line in arrival order.
func (s *server) lineMembers(m *mixedKey) []string {
	s.t.Helper()
	v, err := s.c.ZRange(s.ctx, m.lineKey(), 0, -1).Result()
	s.must(err)
	return v
}

// takeFresh is a protocol-7 attempt by v, queued, whose line is fresh
// (protocol.AcquireArgs.LineFresh).
func (m *mixedKey) takeFresh(v string) []int64 {
	m.t.Helper()
	args := protocol.AcquireArgs{Value: v, TTL: m.leaseTTL(), Fencing: true, Identity: protocol.IdentityFromValue(v),
		Place: time.Minute, Queued: true, Window: mixedWindow, Permits: m.permits, Quarantine: m.q, LineFresh: true}
	var cmd *redis.Cmd
	if m.permits > 0 {
		cmd = m.run(protocol.AcquirePermitScript, protocol.AcquirePermitKeys(m.key), args.PermitArgv()...)
	} else {
		call := protocol.AcquireCall(m.key, args)
		cmd = m.run(call.Script, call.Keys, call.Args...)
	}
	res, err := ints(cmd)
	m.must(err)
	return res
}

// protocol6 runs the last protocol-6 scripts, which take the same keys
// and arguments as protocol 7's (less the line's refresh flag, which they
// ignore).
var protocol6 = oldClient{
	take: func(m *mixedKey, args protocol.AcquireArgs) *redis.Cmd {
		if m.permits > 0 {
			return v6PermitAcquire.Run(m.ctx, m.c, protocol.AcquirePermitKeys(m.key), args.PermitArgv()...)
		}
		return v6Acquire.Run(m.ctx, m.c, protocol.AcquireKeys(m.key), args.Argv()...)
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
			return v6PermitRelease.Run(m.ctx, m.c, keys, argv...).Int()
		}
		call := protocol.FullReleaseCall(m.key, v, a)
		return v6Release.Run(m.ctx, m.c, call.Keys, call.Args...).Int()
	},
}

// A failover quarantine holds protocol-6 and protocol-7 clients alike, so
// the two may share a key with the quarantine on as they may without it
// (docs/upgrading.md's support window): after a promotion, a holder of
// either version releases without handing the key over, no client of
// either version is granted it, and the waiter of the other version gets
// it once the quarantine has passed. A client that ignored the quarantine
// (as protocol 4's did) fails the "no grant" checks.
func TestAQuarantineHoldsProtocol6And7Alike(t *testing.T) {
	for _, kind := range []quarantineKind{{"lock", 0}, {"semaphore", 1}} {
		for _, oldHolder := range []bool{true, false} {
			name := kind.name + "/" + map[bool]string{true: "protocol-6 holder, protocol-7 waiter", false: "protocol-7 holder, protocol-6 waiter"}[oldHolder]
			t.Run(name, func(t *testing.T) {
				s := newServer(t)
				m := &mixedKey{server: s, old: protocol6, key: "job", permits: kind.permits,
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

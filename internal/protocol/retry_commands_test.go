package protocol_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// A waiter trying again for a held key runs only the commands its answer
// needs (protocol 7): no SET NX once the script has seen the key held (a
// queued attempt's GET, FIFO's EXISTS), no TIME and ZADD for a place it
// already has, and no PEXPIRE of the line while its line is fresh; a
// missing refresh flag (a protocol-6 caller's) keeps the line as before.
// Protocol 6's script, on the same calls, runs every one of those: the
// test tells the two apart.
func TestAWaiterTryingAgainRunsOnlyWhatItNeeds(t *testing.T) {
	unneeded := []string{"set", "time", "zadd"}
	tests := []struct {
		name  string
		fifo  bool
		fresh bool
		old   bool
		// ran are the commands the retry must run, skipped those it must not.
		ran, skipped []string
	}{
		{"fresh", false, true, false, []string{"get", "zscore", "pttl"}, append(unneeded, "pexpire", "exists")},
		{"fresh, FIFO", true, true, false, []string{"get", "zscore", "pttl"}, append(unneeded, "pexpire", "exists")},
		{"due to keep the line", false, false, false, []string{"get", "zscore", "pexpire"}, unneeded},
		{"protocol 6", false, true, true, []string{"get", "set", "time", "zadd", "pexpire"}, []string{"zscore"}},
		{"protocol 6, FIFO", true, true, true, []string{"get", "exists", "set", "time", "zadd", "pexpire"}, []string{"zscore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			m := &mixedKey{server: s, old: protocol6, key: "job"}
			expect(t, m.take(false, value(t, "holder:1"))[0], 1, "the holder")
			waiter := value(t, "waiter:1")
			args := protocol.AcquireArgs{Value: waiter, TTL: 10 * time.Second, Fencing: true, Identity: "waiter:1",
				Place: time.Minute, Queued: true, FIFO: tt.fifo, Window: time.Second, LineFresh: tt.fresh}
			retry := func() []int64 {
				t.Helper()
				var cmd *redis.Cmd
				if tt.old {
					cmd = v6Acquire.Run(s.ctx, s.c, protocol.AcquireKeys(m.key), args.Argv()...)
				} else {
					call := protocol.AcquireCall(m.key, args)
					cmd = s.run(call.Script, call.Keys, call.Args...)
				}
				res, err := ints(cmd)
				s.must(err)
				return res
			}
			expect(t, retry()[0], 0, "the waiter's first attempt")
			s.must(s.c.PExpire(s.ctx, protocol.LineKey(m.key), 30*time.Second).Err())
			s.must(s.c.ConfigResetStat(s.ctx).Err())

			expect(t, retry()[0], 0, "the waiter trying again")
			calls := s.commandCalls()
			for _, c := range tt.ran {
				if calls[c] == 0 {
					t.Errorf("the retry ran no %s (ran %v)", strings.ToUpper(c), calls)
				}
			}
			for _, c := range tt.skipped {
				if calls[c] != 0 {
					t.Errorf("the retry ran %s %d times (ran %v)", strings.ToUpper(c), calls[c], calls)
				}
			}
			kept := s.c.PTTL(s.ctx, protocol.LineKey(m.key)).Val() > 30*time.Second
			expect(t, kept, slices.Contains(tt.ran, "pexpire"), "the line kept a Place longer")
		})
	}
}

// A protocol-6 caller sends no refresh flag (its AcquireArgs end before
// it): protocol 7 reads the missing flag as "keep the line", so a waiter
// that was never told of the flag keeps its place, as it did.
func TestAMissingRefreshFlagKeepsTheLine(t *testing.T) {
	s := newServer(t)
	m := &mixedKey{server: s, old: protocol6, key: "job"}
	expect(t, m.take(false, value(t, "holder:1"))[0], 1, "the holder")
	waiter := value(t, "waiter:1")
	args := protocol.AcquireArgs{Value: waiter, TTL: 10 * time.Second, Fencing: true, Identity: "waiter:1",
		Place: time.Minute, Queued: true, Window: time.Second}
	argv := args.Argv()
	argv = argv[:len(argv)-2] // protocol 6's twelve arguments
	for i := range 2 {
		res, err := ints(s.run(protocol.AcquireScript, protocol.AcquireKeys(m.key), argv...))
		s.must(err)
		expect(t, res[0], 0, "attempt "+strconv.Itoa(i))
		if i == 0 {
			s.must(s.c.PExpire(s.ctx, protocol.LineKey(m.key), 30*time.Second).Err())
		}
	}
	expect(t, s.c.PTTL(s.ctx, protocol.LineKey(m.key)).Val() > 30*time.Second, true, "the line kept a Place longer")
}

// commandCalls is how many times each command ran since the server's
// stats were reset (INFO commandstats), by lower-case name.
func (s *server) commandCalls() map[string]int {
	info, err := s.c.Info(s.ctx, "commandstats").Result()
	s.must(err)
	calls := map[string]int{}
	for line := range strings.SplitSeq(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, stats, _ := strings.Cut(rest, ":")
		for field := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.Atoi(v)
				s.must(err)
				calls[name] = n
			}
		}
	}
	return calls
}

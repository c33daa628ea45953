package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Server command time (issue 45): the µs redis-server spent running the
// commands a row's clients sent, from INFO commandstats. It leaves out what
// "Redis CPU/op" includes (reading, parsing, replying, the event loop), so
// it isolates what a library asks the server to compute.
//
// commandstats counts a command a script runs twice: under its own name,
// and inside the script's time (checked on Redis 7.0: a script of 200 INCRs
// takes 100 µs under evalsha, and its INCRs' 0.14 µs each are in
// cmdstat_incr too). Summing every command would charge a script-based lock
// its commands twice and the raw floor's bare SET once. So only the calls
// the clients sent count, and the clients count them (Sent, a go-redis
// hook): a script's time, which includes what it ran, and a bare command's,
// but not the same command run inside a script, nor the runner's INFO.

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls int64
	Usec  int64
}

// CommandStats is INFO commandstats by command name, lower case, with
// subcommands folded into their command ("config|resetstat" is "config"):
// the clients' counts (Counts) know commands by their first word only.
type CommandStats map[string]CommandStat

// ParseCommandStats reads the cmdstat_ lines of an INFO map (Server.Info):
// "cmdstat_evalsha" → "calls=12,usec=34,usec_per_call=2.83,...". Lines it
// cannot read count as zero: a malformed field skews one row's figure, it
// does not fail a run.
func ParseCommandStats(info map[string]string) CommandStats {
	out := CommandStats{}
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "|")
		var st CommandStat
		for field := range strings.SplitSeq(v, ",") {
			key, val, _ := strings.Cut(field, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch key {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			}
		}
		out[name] = out[name].add(st)
	}
	return out
}

func (s CommandStat) add(o CommandStat) CommandStat {
	return CommandStat{s.Calls + o.Calls, s.Usec + o.Usec}
}

// Add is s and o together (several servers, or rounds).
func (s CommandStats) Add(o CommandStats) CommandStats {
	out := CommandStats{}
	for k, v := range s {
		out[k] = v
	}
	for k, v := range o {
		out[k] = out[k].add(v)
	}
	return out
}

// Sub is s less o (a later snapshot less an earlier one).
func (s CommandStats) Sub(o CommandStats) CommandStats {
	out := CommandStats{}
	for k, v := range s {
		out[k] = v.add(CommandStat{-o[k].Calls, -o[k].Usec})
	}
	return out
}

// Calls sums the calls of the named commands.
func (s CommandStats) Calls(names ...string) int64 {
	var n int64
	for _, name := range names {
		n += s[name].Calls
	}
	return n
}

// SentMicros is the server's time for the calls in sent: every command's
// usec in the share of its calls that a client sent (sent ÷ calls, at most
// all of them). A command only scripts ran counts nothing (its time is in
// the script's), nor does one no counted client sent (the runner's INFO).
// A command both sent bare and run by scripts in one row is prorated by
// calls, which assumes the two cost alike; no row does that today.
func (s CommandStats) SentMicros(sent Counts) float64 {
	var us float64
	for name, st := range s {
		n := sent[name]
		if n <= 0 || st.Calls <= 0 || st.Usec <= 0 {
			continue
		}
		us += float64(st.Usec) * min(1, float64(n)/float64(st.Calls))
	}
	return us
}

// Counts is commands by name, lower case: what clients sent.
type Counts map[string]int64

// Add is c and o together.
func (c Counts) Add(o Counts) Counts {
	out := Counts{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range o {
		out[k] += v
	}
	return out
}

// Total is every command in c.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Sub is c less o.
func (c Counts) Sub(o Counts) Counts {
	out := Counts{}
	for k, v := range c {
		out[k] = v - o[k]
	}
	return out
}

// Sent is a go-redis hook that counts the commands the clients it is added
// to send, by name. The clients a connection is made from (Client.Conn)
// pass it on. Commands on a pub/sub connection do not go through hooks,
// nor do the ones go-redis sends when it opens a connection; neither is
// part of a measured cycle. A MULTI/EXEC would count its commands twice
// (EXEC's time includes theirs, as a script's does); no library here sends
// one.
type Sent struct {
	n sync.Map // name → *atomic.Int64: lock-free once a name is known, so counting does not serialise the goroutines it counts
}

// Watch adds the hook to c and returns c.
func (s *Sent) Watch(c *redis.Client) *redis.Client {
	c.AddHook(s)
	return c
}

func (s *Sent) add(name string) {
	v, ok := s.n.Load(name)
	if !ok {
		v, _ = s.n.LoadOrStore(name, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// Counts is what the watched clients have sent so far.
func (s *Sent) Counts() Counts {
	out := Counts{}
	s.n.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// DialHook passes dials through.
func (s *Sent) DialHook(next redis.DialHook) redis.DialHook {
	return next
}

// ProcessHook counts a command.
func (s *Sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd.Name())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts each command of a pipeline.
func (s *Sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.add(cmd.Name())
		}
		return next(ctx, cmds)
	}
}

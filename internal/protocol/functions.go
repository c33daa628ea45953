package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// LibraryName is the Redis Functions library holding every script of this
// protocol version. Function names are global across a server's libraries,
// so each function's name carries the version too (FunctionName): the
// libraries of two protocol versions coexist during a rolling upgrade.
var LibraryName = "redlease_v" + strconv.Itoa(Version)

// Script is one script of the protocol: a function of the library
// (FunctionName) on servers that have it loaded, else a script run with
// EVALSHA (EVAL the first time on a server).
type Script struct {
	*redis.Script
	function string // FunctionName
	src      string // the pieces it uses, then body: what EVALSHA runs
	body     string // what the library's function runs, the pieces defined at load
	fast     string // the uncontended path src and body start with (newFastScript)
	// readOnly scripts are flagged no-writes in the library and called
	// with FCALL_RO.
	readOnly bool
	// once: go-redis never sends the script again on its own (sentOnce).
	once bool
	// hashArg and functionArg are Hash() and FunctionName() in
	// interfaces, made once: a string put in an interface at run time is
	// copied to the heap each time (way.args).
	hashArg, functionArg any
}

// newScript is the script name: body, run after uses, the pieces
// (scripts.go) it calls, listed in their order in pieces.
func newScript(name string, readOnly bool, body string, uses ...string) *Script {
	return buildScript(name, readOnly, strings.Join(uses, "")+body, body)
}

// newFastScript is newScript with fast, an uncontended path that may
// return early and calls no piece, placed before the pieces: run with
// EVALSHA, the script defines them only when it gets past fast, which is
// most of what an uncontended call would cost the server. The library's
// function runs fast first too.
func newFastScript(name, fast, body string, uses ...string) *Script {
	s := buildScript(name, false, fast+strings.Join(uses, "")+body, fast+body)
	s.fast = fast
	return s
}

// buildScript is the script name running src with EVALSHA and body as the
// library's function.
func buildScript(name string, readOnly bool, src, body string) *Script {
	s := &Script{Script: redis.NewScript(src), function: LibraryName + "_" + name, src: src, body: body, readOnly: readOnly}
	s.hashArg, s.functionArg = s.Hash(), s.function
	return s
}

// FunctionName is the script's function in the library.
func (s *Script) FunctionName() string { return s.function }

// functionPrologue resets the piece variables a script sets,
// events_sharded and line_tickets (lua/line.lua), fence_known
// (lua/fence.lua) and epoch_recorded (lua/epoch.lua): in the library they
// outlive the call that set them.
const functionPrologue = "events_sharded = false\nline_tickets = false\nfence_known = nil\nepoch_recorded = nil\n"

// Library is the source of the library (FUNCTION LOAD): the shared pieces,
// defined once when the library loads, then each script as a function whose
// body is the script's own, KEYS and ARGV its parameters, so both ways of
// running it run the same Lua. A script run with EVALSHA defines its pieces
// again on every call; a function does not (a call of the acquire or the
// release costs redis-server 3.2 µs as a function, 4.2 µs as a script:
// docs/benchmarks.md).
//
// Every function first runs functionPrologue.
func Library() string {
	var b strings.Builder
	b.WriteString("#!lua name=" + LibraryName + "\n")
	for _, p := range pieces {
		b.WriteString(p)
	}
	for _, s := range scripts {
		fmt.Fprintf(&b, "redis.register_function{function_name='%s', callback=function(KEYS, ARGV)\n%s%s\nend", s.FunctionName(), functionPrologue, s.body)
		if s.readOnly {
			b.WriteString(", flags={'no-writes'}")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// LoadLibrary loads (or replaces) the library on c's server, which must be
// a master: it replicates to the replicas. On a Redis Cluster client it
// loads it on every master, where a FUNCTION LOAD would reach one node.
func LoadLibrary(ctx context.Context, c redis.Cmdable) error {
	if cluster, ok := c.(interface {
		ForEachMaster(context.Context, func(context.Context, *redis.Client) error) error
	}); ok {
		return cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return LoadLibrary(ctx, m)
		})
	}
	if err := c.FunctionLoadReplace(ctx, Library()).Err(); err != nil {
		return fmt.Errorf("loading the %s library: %w", LibraryName, err)
	}
	return nil
}

// FunctionsMode says how a Caller runs the scripts.
type FunctionsMode int

const (
	// FunctionsAuto calls the library's functions where the server has
	// the library, and runs scripts (EVALSHA) where it does not.
	FunctionsAuto FunctionsMode = iota
	// FunctionsOff only runs scripts.
	FunctionsOff
	// FunctionsLoad loads the library where it is missing (FUNCTION LOAD
	// rights needed), then calls its functions.
	FunctionsLoad
)

// ErrLibraryMissing reports a server where the script could not run either
// way: the library is not loaded, and the caller may not run scripts (a
// tenant of a store that allows functions only). Whoever loads the library
// (the controller) fixes it; the call is worth retrying.
var ErrLibraryMissing = errors.New("the " + LibraryName + " function library is not loaded and scripts are refused")

// Caller runs the protocol's scripts for one client of one deployment, the
// library's functions or scripts, whichever the server serves: it starts
// with functions (unless FunctionsOff) and, when a call finds the other
// way is the one that works (the function missing, or scripts refused by
// the caller's ACL), switches to it for the calls after. So a process
// decides once per deployment, and again only when a call fails for the
// way it chose (the library wiped by a restart-empty, a store that turned
// scripts off). A Caller is safe for concurrent use.
type Caller struct {
	mode FunctionsMode
	// scripts is the current choice: run scripts rather than functions.
	scripts atomic.Bool
}

// NewCaller returns a Caller in mode.
func NewCaller(mode FunctionsMode) *Caller {
	c := &Caller{mode: mode}
	c.scripts.Store(mode == FunctionsOff)
	return c
}

// Call is one script call: KEYS and ARGV.
type Call struct {
	Script *Script
	Keys   []string
	Args   []any
}

// Runner runs scripts on one client: one call, or many in one pipeline.
type Runner interface {
	Run(ctx context.Context, call Call) *redis.Cmd
	Pipelined(ctx context.Context, calls []Call) []*redis.Cmd
}

// scriptsOnly never switches: it is shared by every Scripts runner.
var scriptsOnly = NewCaller(FunctionsOff)

// Scripts runs every call as a script (EVALSHA, EVAL on NOSCRIPT) on c:
// for callers whose credentials may run scripts, the controller's.
func Scripts(c redis.Cmdable) Runner { return scriptsOnly.On(c) }

// On binds c to client.
func (c *Caller) On(client redis.Cmdable) Runner { return bound{c, client} }

type bound struct {
	c      *Caller
	client redis.Cmdable
}

func (b bound) Run(ctx context.Context, call Call) *redis.Cmd { return b.c.Run(ctx, b.client, call) }

func (b bound) Pipelined(ctx context.Context, calls []Call) []*redis.Cmd {
	return b.c.Pipelined(ctx, b.client, calls, nil)
}

// Run runs call on client, the way the Caller chose (see Pipelined).
func (c *Caller) Run(ctx context.Context, client redis.Cmdable, call Call) *redis.Cmd {
	first := c.first()
	cmd := first.send(ctx, client, call)
	if c.settled(first, cmd) {
		return cmd
	}
	return c.again(ctx, client, []Call{call}, []*redis.Cmd{cmd}, first, nil)[0]
}

// Pipelined runs calls in one pipeline on client, the way the Caller
// chose, and then runs queue (nil: nothing) in the same pipeline: WAIT
// after an acquisition must follow it on its connection. Calls that failed
// for the way chosen (a function missing, scripts refused, a script the
// server does not know yet) run again, with queue, in a second pipeline
// the other way (with FunctionsLoad: the function, once the library is
// loaded; a script unknown to the server: with EVAL), and a way that works
// becomes the choice. A call that fails both ways fails with
// ErrLibraryMissing. queue may be called twice: the replies of its last
// call are the ones that count.
func (c *Caller) Pipelined(ctx context.Context, client redis.Cmdable, calls []Call, queue func(redis.Pipeliner)) []*redis.Cmd {
	first := c.first()
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, call := range calls {
			cmds[i] = first.send(ctx, p, call)
		}
		if queue != nil {
			queue(p)
		}
		return nil
	})
	for _, cmd := range cmds {
		if !c.settled(first, cmd) {
			return c.again(ctx, client, calls, cmds, first, queue)
		}
	}
	return cmds
}

// first is the way the Caller chose.
func (c *Caller) first() way {
	if c.scripts.Load() {
		return wayEvalSha
	}
	return wayFunction
}

// settled: cmd, sent the way first, needs no second try.
func (c *Caller) settled(first way, cmd *redis.Cmd) bool {
	// A nil error first: redis.HasErrorPrefix allocates even for nil, and
	// this runs for every call.
	err := cmd.Err()
	return err == nil || !first.wrong(err) && !redis.HasErrorPrefix(err, "NOSCRIPT")
}

// retryWay is the way to send again a call that failed with err, sent the
// way first, if it is to be sent again. A nil error is checked first:
// redis.HasErrorPrefix allocates even for nil.
func (c *Caller) retryWay(first way, err error) (way, bool) {
	switch {
	case err == nil:
		return first, false
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return wayEval, true
	case first.wrong(err) && c.mode != FunctionsOff:
		return c.otherWay(first), true
	}
	return first, false
}

// again sends, with queue, in one more pipeline, the calls whose cmds
// (sent the way first) are not settled, each the other way, and updates
// the choice.
func (c *Caller) again(ctx context.Context, client redis.Cmdable, calls []Call, cmds []*redis.Cmd, first way, queue func(redis.Pipeliner)) []*redis.Cmd {
	var (
		idx  []int
		ways []way
	)
	for i, cmd := range cmds {
		if w, ok := c.retryWay(first, cmd.Err()); ok {
			idx, ways = append(idx, i), append(ways, w)
		}
	}
	if len(idx) == 0 {
		return cmds
	}
	if first == wayFunction && c.mode == FunctionsLoad {
		if err := LoadLibrary(ctx, client); err != nil {
			for _, i := range idx {
				cmds[i] = redis.NewCmdResult(nil, err)
			}
			return cmds
		}
	}
	second := make([]*redis.Cmd, len(idx))
	if len(idx) == 1 && queue == nil {
		// No pipeline for one call: go-redis may serve pipelines from
		// connections of their own.
		second[0] = ways[0].send(ctx, client, calls[idx[0]])
	} else {
		_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
			// One EVAL per script gives the server the script; the
			// calls of the same script after it go by EVALSHA.
			evaled := map[*Script]bool{}
			for j, i := range idx {
				w := ways[j]
				if w == wayEval && evaled[calls[i].Script] {
					w = wayEvalSha
				}
				evaled[calls[i].Script] = evaled[calls[i].Script] || w == wayEval
				second[j] = w.send(ctx, p, calls[i])
			}
			if queue != nil {
				queue(p)
			}
			return nil
		})
	}
	for j, i := range idx {
		if err := second[j].Err(); ways[j].wrong(err) {
			second[j] = redis.NewCmdResult(nil, fmt.Errorf("%w: %w; %w", ErrLibraryMissing, cmds[i].Err(), err))
		} else if (ways[j] == wayFunction) != (first == wayFunction) {
			c.scripts.Store(ways[j] != wayFunction)
		}
		cmds[i] = second[j]
	}
	return cmds
}

// way is how one call runs.
type way int

const (
	wayFunction way = iota
	wayEvalSha
	wayEval
)

// otherWay is the way to try after first failed for its way: a script
// (with EVAL: the server may not know it yet) after a function, a function
// after a script — or, with FunctionsLoad, the function again once loaded.
func (c *Caller) otherWay(first way) way {
	if first == wayFunction && c.mode != FunctionsLoad {
		return wayEval
	}
	return wayFunction
}

// wrong reports an error that says w is not the way this server serves
// the call: for a function, the function or FCALL itself missing (a server
// without the library, older than Redis 7.0, or an ACL without FCALL); for
// a script, the caller's ACL refusing EVAL or EVALSHA.
func (w way) wrong(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	if w != wayFunction {
		return strings.HasPrefix(msg, "noperm") && strings.Contains(msg, "'eval")
	}
	return strings.Contains(msg, "function not found") ||
		(strings.Contains(msg, "unknown command") && strings.Contains(msg, "fcall")) ||
		(strings.HasPrefix(msg, "noperm") && strings.Contains(msg, "fcall"))
}

// send sends call on c, the way w. Where c can process a command of ours,
// as go-redis's clients and pipelines can, the command is built once
// (way.args: go-redis's EvalSha would put the keys and arguments in a
// slice of its own again, four more allocations per call) and sent once
// (sentOnce) when the script says so.
func (w way) send(ctx context.Context, c redis.Cmdable, call Call) *redis.Cmd {
	if p, ok := c.(processor); ok {
		cmd := redis.NewCmd(ctx, w.args(call)...)
		if call.Script.once {
			_ = p.Process(ctx, sentOnce{cmd}) // the error is cmd's
		} else {
			_ = p.Process(ctx, cmd)
		}
		return cmd
	}
	switch {
	case w == wayEvalSha:
		return call.Script.EvalSha(ctx, c, call.Keys, call.Args...)
	case w == wayEval:
		return call.Script.Eval(ctx, c, call.Keys, call.Args...)
	case call.Script.readOnly:
		return c.FCallRO(ctx, call.Script.FunctionName(), call.Keys, call.Args...)
	}
	return c.FCall(ctx, call.Script.FunctionName(), call.Keys, call.Args...)
}

// args are the command that runs call the way w.
func (w way) args(call Call) []any {
	args := make([]any, 0, 3+len(call.Keys)+len(call.Args))
	switch {
	case w == wayEvalSha:
		args = append(args, "evalsha", call.Script.hashArg)
	case w == wayEval:
		args = append(args, "eval", call.Script.src)
	case call.Script.readOnly:
		args = append(args, "fcall_ro", call.Script.functionArg)
	default:
		args = append(args, "fcall", call.Script.functionArg)
	}
	args = append(args, len(call.Keys))
	for _, k := range call.Keys {
		args = append(args, k)
	}
	return append(args, call.Args...)
}

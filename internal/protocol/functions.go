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
	name string
	src  string
	// readOnly scripts are flagged no-writes in the library and called
	// with FCALL_RO.
	readOnly bool
}

func newScript(name, src string, readOnly bool) *Script {
	return &Script{Script: redis.NewScript(src), name: name, src: src, readOnly: readOnly}
}

// FunctionName is the script's function in the library.
func (s *Script) FunctionName() string { return LibraryName + "_" + s.name }

// Library is the source of the library (FUNCTION LOAD): each script
// becomes a function whose body is the script itself, KEYS and ARGV its
// parameters, so both ways of running it run the same Lua.
func Library() string {
	var b strings.Builder
	b.WriteString("#!lua name=" + LibraryName + "\n")
	for _, s := range scripts {
		fmt.Fprintf(&b, "redis.register_function{function_name='%s', callback=function(KEYS, ARGV)\n%s\nend", s.FunctionName(), s.src)
		if s.readOnly {
			b.WriteString(", flags={'no-writes'}")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// LoadLibrary loads (or replaces) the library on c's server, which must be
// a master: it replicates to the replicas.
func LoadLibrary(ctx context.Context, c redis.Cmdable) error {
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

// Runner runs scripts on one client.
type Runner interface {
	Run(ctx context.Context, call Call) *redis.Cmd
}

// Scripts runs every call as a script (EVALSHA, EVAL on NOSCRIPT) on c:
// for callers whose credentials may run scripts, the controller's.
func Scripts(c redis.Scripter) Runner { return scriptsOnly{c} }

type scriptsOnly struct{ c redis.Scripter }

func (s scriptsOnly) Run(ctx context.Context, call Call) *redis.Cmd {
	return call.Script.Run(ctx, s.c, call.Keys, call.Args...)
}

// On binds c to client.
func (c *Caller) On(client redis.Cmdable) Runner { return bound{c, client} }

type bound struct {
	c      *Caller
	client redis.Cmdable
}

func (b bound) Run(ctx context.Context, call Call) *redis.Cmd {
	return b.c.Pipelined(ctx, b.client, []Call{call}, nil)[0]
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
	scripts := c.scripts.Load()
	first := wayFunction
	if scripts {
		first = wayEvalSha
	}
	cmds := c.send(ctx, client, calls, func(int) way { return first }, queue)
	var (
		again []int
		ways  []way
	)
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			again, ways = append(again, i), append(ways, wayEval)
		case first.wrong(err):
			again, ways = append(again, i), append(ways, c.otherWay(first))
		}
	}
	if len(again) == 0 {
		return cmds
	}
	if first == wayFunction && c.mode == FunctionsLoad {
		if err := LoadLibrary(ctx, client); err != nil {
			for _, i := range again {
				cmds[i] = redis.NewCmdResult(nil, err)
			}
			return cmds
		}
	}
	retry := make([]Call, len(again))
	for j, i := range again {
		retry[j] = calls[i]
	}
	second := c.send(ctx, client, retry, func(j int) way { return ways[j] }, queue)
	for j, i := range again {
		if err := second[j].Err(); ways[j].wrong(err) {
			second[j] = redis.NewCmdResult(nil, fmt.Errorf("%w: %w; %w", ErrLibraryMissing, cmds[i].Err(), err))
		} else if (ways[j] == wayFunction) == scripts {
			c.scripts.Store(!scripts)
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

func (c *Caller) send(ctx context.Context, client redis.Cmdable, calls []Call, wayOf func(int) way, queue func(redis.Pipeliner)) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, call := range calls {
			switch wayOf(i) {
			case wayFunction:
				if call.Script.readOnly {
					cmds[i] = p.FCallRO(ctx, call.Script.FunctionName(), call.Keys, call.Args...)
				} else {
					cmds[i] = p.FCall(ctx, call.Script.FunctionName(), call.Keys, call.Args...)
				}
			case wayEvalSha:
				cmds[i] = call.Script.EvalSha(ctx, p, call.Keys, call.Args...)
			case wayEval:
				cmds[i] = call.Script.Eval(ctx, p, call.Keys, call.Args...)
			}
		}
		if queue != nil {
			queue(p)
		}
		return nil
	})
	return cmds
}

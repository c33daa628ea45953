package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/redlease/redlease/pkg/lock"
)

// The processes scenario: contenders are separate processes, as pods are,
// each with its own client (and Locker). The runner re-executes its own
// binary as workers; they report their holdings on CLOCK_MONOTONIC, one
// clock for every process on the machine.

// workerEnv names the library a worker process runs; its presence makes
// the process a worker (see WorkerMain).
const workerEnv = "BENCH_WORKER_LIB"

// ProcessLib is a library a worker process can build on its own client.
type ProcessLib struct {
	Name, Family, Tuning string
	// MaxProcesses, when above 0, is the most worker processes the
	// library runs with: an agent row's every worker runs an agent too.
	MaxProcesses int
	build        func(client *redis.Client, ttl time.Duration) (*Lib, error)
}

// ProcessLibs are the processes scenario's libraries: redlease as
// scripts with its defaults, with WithFIFO and with WithTicketOrder, and
// with its defaults through the library's functions; redlease through the
// lock agent (AgentProcessLibs); and each peer with the tuning that did
// best in the in-process hand-off (1 ms retries).
func ProcessLibs() []ProcessLib {
	return slices.Concat(redleaseProcessLibs(), AgentProcessLibs(), peerProcessLibs())
}

func redleaseProcessLibs() []ProcessLib {
	// The script rows say FunctionsOff: the functions row loads the
	// library on the server they share, where a Locker's default would
	// call it.
	scripts := lock.WithFunctions(lock.FunctionsOff)
	return []ProcessLib{
		{"redlease", FamilyRedlease, "a Locker per process, defaults (waiting line), scripts", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedlease("redlease", "", c, lock.WithTTL(ttl), scripts)
		}},
		{"redlease (FIFO)", FamilyRedlease, "a Locker per process, WithFIFO(), scripts", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedlease("redlease (FIFO)", "", c, lock.WithTTL(ttl), lock.WithFIFO(), scripts)
		}},
		{"redlease (ticket order)", FamilyRedlease, "a Locker per process, WithTicketOrder(), scripts", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedlease("redlease (ticket order)", "", c, lock.WithTTL(ttl), lock.WithTicketOrder(), scripts)
		}},
		{"redlease (functions)", FamilyRedlease, "a Locker per process, the library's functions (FCALL: WithFunctions(FunctionsLoad), as on a store whose controller loaded them)", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedlease("redlease (functions)", "", c, lock.WithTTL(ttl), lock.WithFunctions(lock.FunctionsLoad))
		}},
	}
}

func peerProcessLibs() []ProcessLib {
	return []ProcessLib{
		{"redsync (tuned, delay 1ms)", FamilyRedsync, "WithTries(1<<30), WithRetryDelay(1ms)", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedsync("redsync", "", []*redis.Client{c}, ttl, redsync.WithTries(1<<30), redsync.WithRetryDelay(time.Millisecond)), nil
		}},
		{"redislock (tuned, linear 1ms)", FamilyRedislock, "LinearBackoff(1ms)", 0, func(c *redis.Client, ttl time.Duration) (*Lib, error) {
			return NewRedislock("redislock", "", c, ttl, func() redislock.RetryStrategy { return redislock.LinearBackoff(time.Millisecond) }), nil
		}},
	}
}

func processLib(name string) (ProcessLib, error) {
	for _, l := range ProcessLibs() {
		if l.Name == name {
			return l, nil
		}
	}
	return ProcessLib{}, fmt.Errorf("no process library %q", name)
}

// mono reads CLOCK_MONOTONIC in nanoseconds.
func mono() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return time.Duration(ts.Nano())
}

// IsWorker reports whether this process was started as a worker.
func IsWorker() bool { return os.Getenv(workerEnv) != "" }

// workerReport is what a worker prints when its run ends.
type workerReport struct {
	Holdings [][2]time.Duration `json:"holdings"` // CLOCK_MONOTONIC at acquisition and at the start of release
	Errors   int                `json:"errors"`
	Sent     Counts             `json:"sent"` // the commands this worker's client sent
	Err      string             `json:"err,omitempty"`
}

// WorkerMain is a worker process: it builds its library on a client of
// BENCH_REDIS, says "ready", waits for the runner's "go <end>" line (end on
// CLOCK_MONOTONIC), takes turns on BENCH_KEY holding it BENCH_HOLD each
// time until end, and prints its report. It returns the exit code.
func WorkerMain() int {
	rep := runWorker()
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	if rep.Err != "" {
		return 1
	}
	return 0
}

func runWorker() workerReport {
	pl, err := processLib(os.Getenv(workerEnv))
	if err != nil {
		return workerReport{Err: err.Error()}
	}
	hold, _ := time.ParseDuration(os.Getenv("BENCH_HOLD"))
	ttl, _ := time.ParseDuration(os.Getenv("BENCH_TTL"))
	key := os.Getenv("BENCH_KEY")
	var sent Sent
	client := sent.Watch(redis.NewClient(&redis.Options{Addr: os.Getenv("BENCH_REDIS"), PoolSize: 4}))
	defer func() { _ = client.Close() }()
	lib, err := pl.build(client, ttl)
	if err != nil {
		return workerReport{Err: err.Error()}
	}
	defer lib.Close()
	fmt.Println("ready")
	var word string
	var end int64
	if _, err := fmt.Fscanln(os.Stdin, &word, &end); err != nil || word != "go" {
		return workerReport{Err: fmt.Sprintf("no go line (%q): %v", word, err)}
	}
	before := sent.Counts() // building the library sent its own commands
	rep := contend(lib.Worker(0), key, hold, time.Duration(end))
	rep.Sent = sent.Counts().Sub(before)
	return rep
}

// contend takes turns on key until end (CLOCK_MONOTONIC).
func contend(lockf LockFunc, key string, hold, end time.Duration) workerReport {
	ctx, cancel := context.WithTimeout(context.Background(), end-mono())
	defer cancel()
	var rep workerReport
	for ctx.Err() == nil {
		release, err := lockf(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				rep.Errors++
			}
			continue
		}
		acquired := mono()
		time.Sleep(hold)
		released := mono()
		// The release must not be cut short by the run's deadline.
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if release(rctx) != nil {
			rep.Errors++
		}
		rcancel()
		rep.Holdings = append(rep.Holdings, [2]time.Duration{acquired, released})
	}
	return rep
}

// Processes runs n worker processes (the running binary, exe, re-executed;
// its main must call WorkerMain when IsWorker) of the library named lib,
// taking turns on key at addr for d, each holding it for hold, and returns
// the run as Contended does. Workers start together: each builds its
// client and library first, then all are told to go.
func Processes(ctx context.Context, exe, lib, addr string, n int, hold, ttl, d time.Duration, key string) (Run, error) {
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	procs := make([]*proc, 0, n)
	defer func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	}()
	for range n {
		cmd := exec.CommandContext(ctx, exe) //nolint:gosec // G204: re-executes this benchmark binary as a worker
		cmd.Env = append(os.Environ(), workerEnv+"="+lib, "BENCH_REDIS="+addr, "BENCH_KEY="+key,
			"BENCH_HOLD="+hold.String(), "BENCH_TTL="+ttl.String())
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = sysProcAttr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return Run{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return Run{}, err
		}
		if err := cmd.Start(); err != nil {
			return Run{}, err
		}
		p := &proc{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
		p.out.Buffer(make([]byte, 1<<20), 64<<20)
		procs = append(procs, p)
	}
	for i, p := range procs {
		if !p.out.Scan() || p.out.Text() != "ready" {
			return Run{}, fmt.Errorf("%s: worker %d did not start: %q", lib, i, p.out.Text())
		}
	}
	start := mono()
	for _, p := range procs {
		if _, err := fmt.Fprintf(p.stdin, "go %d\n", int64(start+d)); err != nil {
			return Run{}, err
		}
	}
	per := make([][]holding, n)
	errs := make([]int, n)
	var sent Counts
	for i, p := range procs {
		if !p.out.Scan() {
			return Run{}, fmt.Errorf("%s: worker %d ended without a report", lib, i)
		}
		var rep workerReport
		if err := json.Unmarshal(p.out.Bytes(), &rep); err != nil {
			return Run{}, fmt.Errorf("%s: worker %d: %w", lib, i, err)
		}
		if rep.Err != "" {
			return Run{}, fmt.Errorf("%s: worker %d: %s", lib, i, rep.Err)
		}
		for _, h := range rep.Holdings {
			per[i] = append(per[i], holding{i, h[0] - start, h[1] - start})
		}
		errs[i] = rep.Errors
		sent = sent.Add(rep.Sent)
	}
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	r, err := tallyHoldings(lib, per, errs, nil, d, d)
	r.Sent = sent
	return r, err
}

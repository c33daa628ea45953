// Command benchrun runs every benchmark scenario for redlease, redsync,
// redislock and the raw round-trip floor in one run against the same
// redis-server, computes latency percentiles from per-operation durations,
// and prints a markdown report with ratios to the best peer and to the
// floor. With -plots it also writes PNG plots. Unless -agent=false, the
// uncontended and processes scenarios also run redlease through the lock
// agent (lockctl agent, built from the root module unless
// $REDLEASE_LOCKCTL names one), read against the library's own row.
//
//	cd bench && go run ./cmd/benchrun            # full run, a few minutes on 2 cores
//	cd bench && go run ./cmd/benchrun -quick     # seconds
//	cd bench && go run ./cmd/benchrun -plots ../docs -report /tmp/bench.md
//	cd bench && go run ./cmd/benchrun -quick -pin 0/1  # clients on CPU 0, redis-server on CPU 1 (taskset)
//	cd bench && go run ./cmd/benchrun -quick -only family  # the lock family (issue 44): shared holds, several keys, a writer among readers
//
// It starts its own redis-server processes on 127.0.0.1 and kills them
// when it ends: the redis-server on PATH, or the binary
// REDLEASE_REDIS_SERVER names. Several, comma-separated, run every chosen
// scenario on each server in turn and report them side by side first:
//
//	REDLEASE_REDIS_SERVER=/usr/bin/redis-server,$HOME/.cache/redlease/servers/valkey-8.0.1/bin/redis-server \
//	  go run ./cmd/benchrun -quick -only uncontended,processes
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/bench"
	"github.com/redlease/redlease/internal/protocol"
)

// settings are the knobs of one run.
type settings struct {
	quick        bool
	rounds       int           // interleaved rounds per scenario: noise lands on every library alike
	uncontended  time.Duration // per library, concurrency and round
	contended    time.Duration // per configuration, worker count and round
	redlock      time.Duration // per library, concurrency and round
	hold         time.Duration // contended: how long each holder keeps the key
	ttl          time.Duration // lease length in the latency scenarios
	leases       int           // held-leases scenario
	heldTTL      time.Duration
	heldRenew    time.Duration
	window       time.Duration
	concurrency  []int
	workers      []int
	processes    []int // processes scenario: worker processes per run
	redlockNodes int
	scenarios    map[string]bool
	poolSize     int
	pin          string        // -pin's value, "" when not pinned by it
	agent        bool          // also measure redlease through the lock agent (uncontended, processes)
	familyKeys   []int         // lock family: keys a multi-key cycle takes
	amongReaders time.Duration // lock family: a writer among readers, per round
}

const (
	scUncontended = "uncontended"
	scHandoff     = "handoff"
	scRedlock     = "redlock"
	scHeld        = "held"
	scProcesses   = "processes"
	scFamily      = "family"
)

func main() {
	if bench.IsWorker() { // re-executed by the processes scenario
		os.Exit(bench.WorkerMain())
	}
	var (
		quick    = flag.Bool("quick", false, "short run (seconds): fewer rounds, shorter windows")
		plots    = flag.String("plots", "", "directory to write PNG plots into (empty: no plots)")
		report   = flag.String("report", "", "also write the markdown report to this file")
		only     = flag.String("only", "", "comma-separated scenarios to run: uncontended,handoff,processes,redlock,held,family (default: all)")
		rounds   = flag.Int("rounds", 0, "interleaved rounds per scenario (default 3, quick 1)")
		leases   = flag.Int("leases", 10000, "leases held at once in the held-leases scenario")
		window   = flag.Duration("window", 0, "held-leases measuring window (default 10s, quick 3s)")
		poolSize = flag.Int("pool", 64, "go-redis pool size, the same for every library")
		cpuProf  = flag.String("cpuprofile", "", "write this process's CPU profile of the whole run to this file (go tool pprof reads it)")
		agent    = flag.Bool("agent", true, "also measure redlease through the lock agent (lockctl agent on a Unix socket) in the uncontended and processes scenarios; builds lockctl unless "+bench.LockctlEnv+" names one")
		pinTo    = flag.String("pin", "", "C/S: run this process and its worker processes on CPUs C and every redis-server on CPUs S, with taskset (0/1: each on a CPU of its own; 0/0: all on CPU 0); empty: no pinning")
	)
	flag.Parse()
	p, pinned, err := parsePin(*pinTo)
	if err == nil && pinned {
		err = pin(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(2)
	}

	s := settings{
		quick: *quick, rounds: 3, pin: *pinTo,
		uncontended: time.Second, contended: time.Second, redlock: time.Second,
		hold: time.Millisecond, ttl: 10 * time.Second,
		leases: *leases, heldTTL: 3 * time.Second, heldRenew: time.Second, window: 10 * time.Second,
		concurrency: []int{1, 16}, workers: []int{2, 8, 32}, processes: []int{2, 16, 64}, redlockNodes: 5,
		poolSize: *poolSize, agent: *agent,
		familyKeys: []int{2, 8}, amongReaders: 3 * time.Second,
	}
	if s.quick {
		s.rounds = 1
		s.uncontended, s.contended, s.redlock = 300*time.Millisecond, 400*time.Millisecond, 300*time.Millisecond
		s.window, s.amongReaders = 3*time.Second, time.Second
	}
	if *rounds > 0 {
		s.rounds = *rounds
	}
	if *window > 0 {
		s.window = *window
	}
	s.scenarios = map[string]bool{}
	all := []string{scUncontended, scHandoff, scProcesses, scRedlock, scHeld, scFamily}
	if *only == "" {
		for _, sc := range all {
			s.scenarios[sc] = true
		}
	} else {
		for sc := range strings.SplitSeq(*only, ",") {
			sc = strings.TrimSpace(sc)
			if !slices.Contains(all, sc) {
				fmt.Fprintf(os.Stderr, "benchrun: unknown scenario %q (want %s)\n", sc, strings.Join(all, ","))
				os.Exit(2)
			}
			s.scenarios[sc] = true
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = profiled(*cpuProf, func() error { return runAll(ctx, s, *plots, *report) })
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

// results is everything one run measured.
type results struct {
	machine     machine
	settings    settings
	started     time.Time
	elapsed     time.Duration
	loadEnd     string
	uncontended []row // Group = concurrency
	handoff     []row // Group = workers
	processes   []row // Group = worker processes
	redlock     []row // Group = concurrency
	held        []bench.HeldResult
	family      familyResults
}

// row is one library (configured one way) in one scenario at one level of
// concurrency.
type row struct {
	Name, Family, Tuning string
	Variant              string // contended: the tuning group a best variant is chosen from ("" = always shown)
	Level                int    // goroutines or workers
	Run                  bench.Run
	Lat                  bench.Latency
	Cross                bench.Latency // contended: hand-offs to another worker
	Load                 bench.Load    // what Redis did during the runs (commands run by scripts included)
}

// CommandsPerOp is Redis commands per acquire+release cycle (or per
// acquisition, contended).
func (r row) CommandsPerOp() float64 {
	if r.Run.Ops == 0 {
		return 0
	}
	return float64(r.Load.Commands) / float64(r.Run.Ops)
}

// SentPerOp is the commands the clients sent per cycle (or acquisition): a
// script call counts one, the commands it runs none.
func (r row) SentPerOp() float64 {
	if r.Run.Ops == 0 {
		return 0
	}
	return float64(r.Load.Sent.Total()) / float64(r.Run.Ops)
}

// CPUPerOp is redis-server's CPU time per cycle (or acquisition): the load
// a library puts on the server, network handling and scripts included.
func (r row) CPUPerOp() time.Duration {
	if r.Run.Ops == 0 {
		return 0
	}
	return r.Load.CPU / time.Duration(r.Run.Ops)
}

// CommandMicrosPerOp is the servers' command time (INFO commandstats) per
// cycle (or acquisition) for the calls the clients sent: a script's time,
// which includes the commands it ran, and a bare command's
// (bench.CommandStats.SentMicros).
func (r row) CommandMicrosPerOp() float64 {
	if r.Run.Ops == 0 {
		return 0
	}
	return r.Load.CommandMicros() / float64(r.Run.Ops)
}

// counter reads the servers' load, so each run can be charged the Redis
// commands and CPU it caused.
type counter struct {
	srvs   []*bench.Server
	admins []*redis.Client // not watched: their INFO calls are no row's
	sent   bench.Sent      // watches every client the libraries get
}

func newCounter(srvs ...*bench.Server) *counter {
	c := &counter{srvs: srvs}
	for _, s := range srvs {
		c.admins = append(c.admins, s.Client(1))
	}
	return c
}

func (c *counter) close() {
	for _, a := range c.admins {
		_ = a.Close()
	}
}

// measure runs f and returns the load the servers had meanwhile, less the
// INFO calls that measured it, with the commands the watched clients (and
// f's worker processes) sent.
func (c *counter) measure(ctx context.Context, f func() (bench.Run, error)) (bench.Run, bench.Load, error) {
	sent0 := c.sent.Counts()
	l0, err := bench.ServerLoad(ctx, c.srvs, c.admins)
	if err != nil {
		return bench.Run{}, bench.Load{}, err
	}
	r, err := f()
	if err != nil {
		return r, bench.Load{}, err
	}
	l1, err := bench.ServerLoad(ctx, c.srvs, c.admins)
	if err != nil {
		return r, bench.Load{}, err
	}
	l := l1.Sub(l0)
	l.Commands -= int64(len(c.srvs))
	l.Sent = c.sent.Counts().Sub(sent0).Add(r.Sent)
	return r, l, nil
}

// runAll runs the scenarios on each server $REDLEASE_REDIS_SERVER names
// (comma-separated; unset: redis-server from PATH), one after the other,
// and prints one report: with several servers, a comparison of them first
// (as ratios), then each server's full report.
func runAll(ctx context.Context, s settings, plotDir, reportPath string) error {
	servers := strings.Split(os.Getenv(bench.ServerEnv), ",")
	var all []*results
	for _, bin := range servers {
		// bench.StartServer, here and in the Redlock scenario, starts
		// what the variable names: one server at a time.
		if err := os.Setenv(bench.ServerEnv, strings.TrimSpace(bin)); err != nil {
			return err
		}
		res, err := run(ctx, s)
		if err != nil {
			return err
		}
		all = append(all, res)
	}
	var md string
	if len(all) == 1 {
		md = renderReport(all[0])
	} else {
		md = renderComparison(all)
		for _, res := range all {
			md += renderReport(res)
		}
	}
	fmt.Print(md)
	if reportPath != "" {
		if err := os.WriteFile(reportPath, []byte(md), 0o644); err != nil { //nolint:gosec // G306: a report for people to read (docs/), with the mode of the repository's other files
			return err
		}
	}
	if plotDir != "" {
		if len(all) > 1 {
			return errors.New("-plots takes one server: plots compare libraries, not servers")
		}
		files, err := writePlots(all[0], plotDir)
		if err != nil {
			return fmt.Errorf("plots: %w", err)
		}
		for _, f := range files {
			fmt.Fprintln(os.Stderr, "wrote", filepath.Clean(f))
		}
	}
	return nil
}

// run measures the chosen scenarios on one server (bench.ServerBinary).
func run(ctx context.Context, s settings) (*results, error) {
	res := &results{settings: s, started: time.Now(), machine: describeMachine()}
	bin, err := bench.ServerBinary()
	if err != nil {
		return nil, err
	}
	srv, err := bench.StartServer()
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	admin := srv.Client(2)
	defer func() { _ = admin.Close() }()
	res.machine.Server, res.machine.ServerBinary = serverName(ctx, srv, admin), bin
	res.machine.ServerCPUs = srv.CPUs()
	progress("server: %s (%s)", res.machine.Server, bin)
	if res.machine.PingBusy, res.machine.PingIdle, err = pings(ctx, admin, s.hold); err != nil {
		return nil, err
	}

	if s.agent && (s.scenarios[scUncontended] || s.scenarios[scProcesses]) {
		progress("building lockctl for the agent rows (or $%s)", bench.LockctlEnv)
		if _, err := bench.Lockctl(ctx); err != nil { // once, before any worker process needs it
			return nil, err
		}
	}
	cnt := newCounter(srv)
	defer cnt.close()
	var clients []*redis.Client
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	client := func() *redis.Client {
		c := cnt.sent.Watch(srv.Client(s.poolSize))
		clients = append(clients, c)
		return c
	}

	// The scenarios in the order they run, each filling its part of res.
	for _, sc := range []struct {
		name string
		run  func() error
	}{
		{scUncontended, func() (err error) { res.uncontended, err = runUncontended(ctx, s, cnt, client, srv); return err }},
		{scHandoff, func() (err error) { res.handoff, err = runHandoff(ctx, s, cnt, client); return err }},
		{scProcesses, func() (err error) {
			res.processes, err = runProcesses(ctx, s, cnt, srv.Addr)
			// Its functions row loaded the library: the scenarios after it
			// run as they would without it.
			_ = admin.FunctionDelete(ctx, protocol.LibraryName).Err()
			return err
		}},
		{scRedlock, func() (err error) { res.redlock, err = runRedlock(ctx, s); return err }},
		{scHeld, func() (err error) { res.held, err = runHeld(ctx, s, srv, admin, client); return err }},
		{scFamily, func() (err error) { res.family, err = runFamily(ctx, s, cnt, client); return err }},
	} {
		if !s.scenarios[sc.name] {
			continue
		}
		if err := sc.run(); err != nil {
			return nil, err
		}
	}
	res.elapsed = time.Since(res.started)
	res.loadEnd = loadAverage()
	return res, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// warm runs a few cycles per goroutine so scripts are loaded and
// connections dialled before anything is measured.
func warm(ctx context.Context, lib *bench.Lib, goroutines int, prefix string) error {
	_, err := bench.Uncontended(ctx, lib, goroutines, 50*time.Millisecond, slug(prefix)+":warm")
	return err
}

// slug makes a library name usable in a key (keys may not hold whitespace).
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':' {
			return r
		}
		return '-'
	}, s)
}

func runUncontended(ctx context.Context, s settings, cnt *counter, client func() *redis.Client, srv *bench.Server) ([]row, error) {
	libs, err := bench.UncontendedLibs(client, s.ttl)
	if err != nil {
		return nil, err
	}
	defer bench.CloseAll(libs)
	if s.agent {
		a, err := startAgent(ctx, srv.Addr, s.ttl)
		if err != nil {
			return nil, err
		}
		defer a.Close()
		agentLibs := append(bench.AgentLibs(a), bench.HopFloor(srv.Socket))
		defer bench.CloseAll(agentLibs)
		libs = besideRedlease(libs, agentLibs)
	}
	return runLatency(ctx, s, cnt, "uncontended", libs, s.concurrency, s.uncontended)
}

// runLatency measures acquire+release cycles for every library at every
// concurrency (goroutines), interleaving libraries within each round.
func runLatency(ctx context.Context, s settings, cnt *counter, scenario string, libs []*bench.Lib, concurrency []int, d time.Duration) ([]row, error) {
	for _, lib := range libs {
		if err := warm(ctx, lib, slices.Max(concurrency), scenario+":"+lib.Name); err != nil {
			return nil, err
		}
	}
	runs := map[[2]int]*bench.Run{}
	loads := map[[2]int]bench.Load{}
	for round := range s.rounds {
		for _, g := range concurrency {
			for i, lib := range libs {
				progress("%s: %s, %d goroutine(s), round %d/%d", scenario, lib.Name, g, round+1, s.rounds)
				r, n, err := cnt.measure(ctx, func() (bench.Run, error) {
					return bench.Uncontended(ctx, lib, g, d, fmt.Sprintf("%s:%s:%d", scenario, slug(lib.Name), g))
				})
				if err != nil {
					return nil, err
				}
				k := [2]int{g, i}
				if runs[k] == nil {
					runs[k] = &bench.Run{}
				}
				runs[k].Merge(r)
				loads[k] = loads[k].Add(n)
			}
		}
	}
	var rows []row
	for _, g := range concurrency {
		for i, lib := range libs {
			k := [2]int{g, i}
			r := runs[k]
			rows = append(rows, row{Name: lib.Name, Family: lib.Family, Tuning: lib.Tuning, Level: g, Run: *r, Lat: bench.Summarize(r.Durations), Load: loads[k]})
		}
	}
	return rows, nil
}

func runHandoff(ctx context.Context, s settings, cnt *counter, client func() *redis.Client) ([]row, error) {
	libs, err := bench.HandoffLibs(client, s.ttl)
	if err != nil {
		return nil, err
	}
	defer bench.CloseAll(libs)
	for _, lib := range libs {
		if err := warm(ctx, lib, 1, "handoff:"+lib.Name); err != nil {
			return nil, err
		}
	}
	runs := map[[2]int]*bench.Run{}
	loads := map[[2]int]bench.Load{}
	for round := range s.rounds {
		for _, w := range s.workers {
			for i, lib := range libs {
				progress("handoff: %s, %d workers, round %d/%d", lib.Name, w, round+1, s.rounds)
				r, n, err := cnt.measure(ctx, func() (bench.Run, error) {
					return bench.Contended(ctx, lib, w, s.hold, s.contended, 0, fmt.Sprintf("handoff:%d:%d:%d", i, w, round))
				})
				if err != nil {
					return nil, err
				}
				k := [2]int{w, i}
				if runs[k] == nil {
					runs[k] = &bench.Run{}
				}
				runs[k].Merge(r)
				loads[k] = loads[k].Add(n)
			}
		}
	}
	var rows []row
	for _, w := range s.workers {
		for i, lib := range libs {
			k := [2]int{w, i}
			r := runs[k]
			rows = append(rows, row{Name: lib.Name, Family: lib.Family, Tuning: lib.Tuning, Variant: lib.Variant, Level: w,
				Run: *r, Lat: bench.Summarize(r.Durations), Cross: bench.Summarize(r.Cross), Load: loads[k]})
		}
	}
	return rows, nil
}

// runProcesses is the hand-off scenario with separate processes as the
// contenders (this binary re-executed), each with its own client.
func runProcesses(ctx context.Context, s settings, cnt *counter, addr string) ([]row, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	libs := processLibs(s)
	runs := map[[2]int]*bench.Run{}
	loads := map[[2]int]bench.Load{}
	for round := range s.rounds {
		for _, n := range s.processes {
			for i, lib := range libs {
				if lib.MaxProcesses > 0 && n > lib.MaxProcesses {
					continue
				}
				progress("processes: %s, %d processes, round %d/%d", lib.Name, n, round+1, s.rounds)
				r, c, err := cnt.measure(ctx, func() (bench.Run, error) {
					return bench.Processes(ctx, exe, lib.Name, addr, n, s.hold, s.ttl, s.processRound(n), fmt.Sprintf("procs:%d:%d:%d", i, n, round))
				})
				if err != nil {
					return nil, err
				}
				k := [2]int{n, i}
				if runs[k] == nil {
					runs[k] = &bench.Run{}
				}
				runs[k].Merge(r)
				loads[k] = loads[k].Add(c)
			}
		}
	}
	var rows []row
	for _, n := range s.processes {
		for i, lib := range libs {
			k := [2]int{n, i}
			r := runs[k]
			if r == nil { // above the library's MaxProcesses
				continue
			}
			rows = append(rows, row{Name: lib.Name, Family: lib.Family, Tuning: lib.Tuning, Level: n,
				Run: *r, Lat: bench.Summarize(r.Durations), Cross: bench.Summarize(r.Cross), Load: loads[k]})
		}
	}
	return rows, nil
}

// processRound is how long a processes round with n workers lasts: 2
// contended rounds, and at least turnsPerProcess turns of every worker at
// about 4 ms a hand-off (the 64-process rate), so that fairness, the fewest
// over the most acquisitions, measures the order of the turns and not the
// one turn a round's end cuts off (with 7 turns each, a perfect queue reads
// 7/8).
func (s settings) processRound(n int) time.Duration {
	const turnsPerProcess, perTurn = 25, 4 * time.Millisecond
	if s.quick {
		return 2 * s.contended
	}
	return max(2*s.contended, time.Duration(n*turnsPerProcess)*perTurn)
}

func runRedlock(ctx context.Context, s settings) ([]row, error) {
	progress("redlock: starting %d redis-server nodes", s.redlockNodes)
	nodes, err := bench.StartServers(s.redlockNodes)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	cnt := newCounter(nodes...)
	defer cnt.close()
	var clients []*redis.Client
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	newClients := func() []*redis.Client {
		var cs []*redis.Client
		for _, n := range nodes {
			c := cnt.sent.Watch(n.Client(s.poolSize))
			clients = append(clients, c)
			cs = append(cs, c)
		}
		return cs
	}
	libs, err := bench.RedlockLibs(newClients, s.ttl)
	if err != nil {
		return nil, err
	}
	defer bench.CloseAll(libs)
	return runLatency(ctx, s, cnt, "redlock", libs, s.concurrency, s.redlock)
}

func runHeld(ctx context.Context, s settings, srv *bench.Server, admin *redis.Client, client func() *redis.Client) ([]bench.HeldResult, error) {
	makers := []func() (*bench.Holder, error){
		func() (*bench.Holder, error) { return bench.NewRedleaseHolder(client(), s.heldTTL, s.heldRenew) },
		func() (*bench.Holder, error) { return bench.NewRedsyncHolder(client(), s.heldTTL, s.heldRenew), nil },
		func() (*bench.Holder, error) { return bench.NewRedislockHolder(client(), s.heldTTL, s.heldRenew), nil },
	}
	var out []bench.HeldResult
	for i, mk := range makers {
		h, err := mk()
		if err != nil {
			return nil, err
		}
		progress("held: %s, %d leases, TTL %v, renew every %v, window %v", h.Name, s.leases, s.heldTTL, s.heldRenew, s.window)
		r, err := bench.Held(ctx, srv, admin, h, s.leases, s.heldTTL, s.heldRenew, s.window, fmt.Sprintf("held:%d", i))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		// Let the previous library's goroutines and garbage go before the next window.
		if err := flushIdle(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func flushIdle(ctx context.Context) error {
	select {
	case <-time.After(500 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return errors.New("interrupted")
	}
}

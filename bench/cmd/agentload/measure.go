package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/bench"
)

// result is what one mode's agent cost.
type result struct {
	mode           string
	idle, held     bench.Memory // before the leases, and at the window's end
	cpu, window    time.Duration
	acquire        time.Duration // to take every lease
	commandsPerSec float64       // Redis, during the window (renewals)
	lost           int64
}

// CPUShare is the agent's CPU as a share of one core.
func (r result) CPUShare() float64 { return r.cpu.Seconds() / r.window.Seconds() }

// measure runs one mode on a fresh agent, so that no mode inherits another's
// memory.
func measure(ctx context.Context, s settings, mode, lockctl string, srv *bench.Server, admin *redis.Client) (result, error) {
	r := result{mode: mode}
	a, err := bench.StartAgent(lockctl, srv.Addr, "--ttl", s.ttl.String())
	if err != nil {
		return r, err
	}
	defer a.Close()
	if err := sleep(ctx, time.Second); err != nil { // past the start's own allocations
		return r, err
	}
	if r.idle, err = bench.ProcMemory(a.PID()); err != nil {
		return r, err
	}
	keys := make([]string, s.leases)
	for i := range keys {
		keys[i] = fmt.Sprintf("agentload:%s:%d", mode, i)
	}
	start := time.Now()
	h, err := hold(ctx, s, mode, a, keys)
	if err != nil {
		return r, err
	}
	defer h.stop()
	r.acquire = time.Since(start)
	// Every lease renews once before the window opens: the watchdog's
	// interval is TTL/3.
	renew := s.ttl / 3
	if err := sleep(ctx, renew+renew/2); err != nil {
		return r, err
	}
	return window(ctx, s, a, h, srv, admin, r)
}

// window measures the agent's CPU time and Redis's commands over s.window,
// then its memory.
func window(ctx context.Context, s settings, a *bench.Agent, h *holder, srv *bench.Server, admin *redis.Client, r result) (result, error) {
	cpu0, err := bench.ProcCPU(a.PID())
	if err != nil {
		return r, err
	}
	cmds0, err := commands(ctx, srv, admin)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := sleep(ctx, s.window); err != nil {
		return r, err
	}
	cpu1, err := bench.ProcCPU(a.PID())
	if err != nil {
		return r, err
	}
	r.window = time.Since(t0)
	cmds1, err := commands(ctx, srv, admin)
	if err != nil {
		return r, err
	}
	r.cpu = cpu1 - cpu0
	r.commandsPerSec = float64(cmds1-cmds0-1) / r.window.Seconds() // the first INFO counts in the second
	if r.held, err = bench.ProcMemory(a.PID()); err != nil {
		return r, err
	}
	r.lost = h.lost.Load()
	return r, nil
}

// commands is the server's total_commands_processed.
func commands(ctx context.Context, srv *bench.Server, admin *redis.Client) (int64, error) {
	info, err := srv.Info(ctx, admin, "stats")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(info["total_commands_processed"], 10, 64)
}

// hold takes the leases the way mode says.
func hold(ctx context.Context, s settings, mode string, a *bench.Agent, keys []string) (*holder, error) {
	switch mode {
	case "streams":
		return holdStreams(ctx, a.Client(bench.GRPC), keys)
	case "unary-grpc":
		return holdUnary(ctx, a.Client(bench.GRPC), keys, s.period, s.every)
	default:
		return holdUnary(ctx, a.Client(bench.JSON), keys, s.period, s.every)
	}
}

package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/bench"
)

// machine describes where a run happened.
type machine struct {
	CPU   string
	Cores int // the CPUs this process may run on (taskset narrows them)
	// Online is every CPU of the machine: more than Cores when the run
	// was pinned (taskset -c 0 puts the runner, its worker processes and
	// redis-server on one CPU, so no round trip waits for an idle core
	// to wake up).
	Online int
	// ClientCPUs and ServerCPUs are the CPU lists this process (and so
	// its worker processes) and redis-server may run on
	// (Cpus_allowed_list): what -pin, or a taskset around the runner, left.
	ClientCPUs, ServerCPUs string
	GOMAXPROCS             int
	Kernel                 string
	Go                     string
	// Server is the server's name and version from INFO ("valkey
	// 8.0.1"), ServerBinary the program that ran it.
	Server       string
	ServerBinary string
	LoadStart    string
	// Round trips to Redis (PING), back to back and after an idle
	// millisecond: a virtual machine whose cores sleep when idle pays the
	// difference on every round trip that follows a wait, which event-driven
	// waiting does and busy polling does not.
	PingBusy, PingIdle bench.Latency
	Versions           map[string]string // module path → version of the peers and go-redis
}

func describeMachine() machine {
	m := machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		Online:     onlineCPUs(),
		ClientCPUs: bench.AllowedCPUs("self"),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Kernel:     runtime.GOOS + "/" + runtime.GOARCH,
		Go:         runtime.Version(),
		LoadStart:  loadAverage(),
		Versions:   map[string]string{},
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b)) + " " + runtime.GOARCH
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/go-redsync/redsync/v4", "github.com/bsm/redislock", "github.com/redis/go-redis/v9":
				m.Versions[d.Path] = d.Version
			}
		}
	}
	return m
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-1,4"); 0 when
// unknown.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	n := 0
	for r := range strings.SplitSeq(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		z, errZ := strconv.Atoi(hi)
		if errA != nil || errZ != nil {
			return 0
		}
		n += z - a + 1
	}
	return n
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAverage is the 1, 5 and 15 minute load averages, "" when unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// pings measures PING round trips on c: back to back, and each after
// idle of sleep.
func pings(ctx context.Context, c *redis.Client, idle time.Duration) (busy, afterIdle bench.Latency, err error) {
	const n = 500
	measure := func(sleep time.Duration) (bench.Latency, error) {
		d := make([]time.Duration, 0, n)
		for range n {
			if sleep > 0 {
				time.Sleep(sleep)
			}
			t0 := time.Now()
			if err := c.Ping(ctx).Err(); err != nil {
				return bench.Latency{}, err
			}
			d = append(d, time.Since(t0))
		}
		return bench.Summarize(d), nil
	}
	if busy, err = measure(0); err != nil {
		return busy, afterIdle, err
	}
	afterIdle, err = measure(idle)
	return busy, afterIdle, err
}

// serverName is the server's name and version as INFO gives them:
// "valkey 8.0.1" (Valkey reports server_name and valkey_version beside a
// frozen redis_version), else "redis 7.0.15".
func serverName(ctx context.Context, srv *bench.Server, c *redis.Client) string {
	info, err := srv.Info(ctx, c, "server")
	if err != nil {
		return "unknown"
	}
	if name := info["server_name"]; name != "" && info[name+"_version"] != "" {
		return name + " " + info[name+"_version"]
	}
	return "redis " + info["redis_version"]
}

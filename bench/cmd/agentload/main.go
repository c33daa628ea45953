// Command agentload measures what the lock agent (lockctl agent) costs
// while it holds many leases for its clients (issue 43: under 32 MiB and 5 %
// of a core with 1,000): it starts a redis-server and, for each mode, a
// fresh agent on a Unix socket, takes the leases on distinct keys, lets
// every lease renew, then reads the agent's resident memory (VmRSS, and
// its peak VmHWM) and its CPU time over a window from /proc.
//
//	cd bench && go run ./cmd/agentload                     # 1,000 leases, TTL 30s, ~3 min
//	cd bench && go run ./cmd/agentload -ttl 3s -window 10s # renewals every second
//
// Modes: streams (a streamed Acquire per lease over gRPC, the lease lives
// while the stream is open), unary-grpc and unary-json (TryAcquireLease,
// then a KeepAlive per lease every -every, over gRPC or HTTP/JSON). The
// agent is built from this tree unless $REDLEASE_LOCKCTL names one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redlease/redlease/bench"
	"github.com/redlease/redlease/pkg/lock"
)

type settings struct {
	leases        int
	ttl           time.Duration
	period, every time.Duration // unary: keep-alive period, and how often the client sends one
	window        time.Duration
	modes         []string
}

var allModes = []string{"streams", "unary-grpc", "unary-json"}

func main() {
	var (
		s     settings
		modes string
	)
	flag.IntVar(&s.leases, "leases", 1000, "leases held at once, on distinct keys")
	flag.DurationVar(&s.ttl, "ttl", lock.DefaultTTL, "the agent's lease TTL (--ttl); the watchdog renews every TTL/3")
	flag.DurationVar(&s.period, "period", 10*time.Second, "unary modes: the keep-alive period each lease is taken with")
	flag.DurationVar(&s.every, "every", 3*time.Second, "unary modes: how often the client sends each lease a KeepAlive")
	flag.DurationVar(&s.window, "window", 30*time.Second, "the measured window, after every lease has renewed once")
	flag.StringVar(&modes, "modes", strings.Join(allModes, ","), "comma-separated: "+strings.Join(allModes, ","))
	flag.Parse()
	for m := range strings.SplitSeq(modes, ",") {
		if !slices.Contains(allModes, m) {
			fmt.Fprintf(os.Stderr, "agentload: unknown mode %q (want %s)\n", m, strings.Join(allModes, ","))
			os.Exit(2)
		}
		s.modes = append(s.modes, m)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, s)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings) error {
	lockctl, err := bench.Lockctl(ctx)
	if err != nil {
		return err
	}
	srv, err := bench.StartServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	admin := srv.Client(1)
	defer func() { _ = admin.Close() }()
	var results []result
	for _, mode := range s.modes {
		progress("%s: %d leases, TTL %v", mode, s.leases, s.ttl)
		r, err := measure(ctx, s, mode, lockctl, srv, admin)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		results = append(results, r)
	}
	fmt.Print(render(s, results))
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return errors.New("interrupted")
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/redlease/redlease/internal/agent"
)

// DefaultAgentSocket is where `lockctl agent` listens unless told: a
// directory the pod shares between its containers as an emptyDir.
const DefaultAgentSocket = "/run/redlease/agent.sock"

// agentFlags are `lockctl agent`'s own flags.
type agentFlags struct {
	socket     string
	socketMode string
	listen     string
	daprStore  string
	procs      int
}

// agentProcs is the agent's GOMAXPROCS unless told otherwise: its work is
// waiting on sockets, and a second thread running Go code costs a thread
// wake-up per call (on a 2-vCPU VM, 25 % of the agent's CPU per call and
// 12-20 % of its latency: docs/benchmarks.md).
const agentProcs = 1

func newAgentCommand(stderr io.Writer) *cobra.Command {
	var (
		target targetFlags
		flags  agentFlags
	)
	cmd := &cobra.Command{
		Use:   "agent [--socket PATH] [--listen 127.0.0.1:PORT] [--redis URL]",
		Short: "Serve the pod-local lock API (gRPC and HTTP/JSON) for programs in any language",
		Long: `Serve redlease's lock API (api/proto/redlease/lock/v1) to the other
containers of the pod: gRPC, gRPC-Web and HTTP/JSON (Connect) from one
handler, on a Unix socket (--socket) and, when asked, on a loopback port
(--listen). Run it as a native sidecar (lockctl sidecar prints one).

Requests name a DistributedLock (NAME in -n's namespace, else NAMESPACE/NAME),
read through the pod's own ServiceAccount as pkg/kube reads it: the Role
'lockctl rbac' prints is all the agent needs, and a lock it may not read is
refused with the API server's answer. With --redis, requests name keys.

A streamed Acquire holds the lock while the stream is open; TryAcquireLease
and AcquireLease return a handle that lives while KeepAlive calls arrive
within the period the client chose. Every grant carries the library's fence
and validity; the lock value and the Redis password never leave the agent.
On SIGTERM the agent ends every stream and releases every lease.`,
		Example: `  lockctl agent                                        # in a pod: /run/redlease/agent.sock
  lockctl agent --redis redis://localhost:6379 --socket /tmp/agent.sock
  curl --unix-socket /run/redlease/agent.sock -H 'Content-Type: application/json' \
    -d '{"lock":{"name":"nightly"},"keepAlivePeriod":"30s"}' \
    http://agent/redlease.lock.v1.LockService/TryAcquireLease`,
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd, &target, flags, stderr)
		},
	}
	target.registerSource(cmd.Flags())
	target.registerLease(cmd.Flags())
	cmd.Flags().StringVar(&flags.socket, "socket", DefaultAgentSocket, "the Unix socket to serve on; empty: none (then --listen is needed)")
	cmd.Flags().StringVar(&flags.socketMode, "socket-mode", "0600", "the socket's file mode, in octal: 0600 lets the agent's user in only, 0660 the pod's fsGroup too")
	cmd.Flags().StringVar(&flags.listen, "listen", "", "also serve on this loopback address, e.g. 127.0.0.1:7070 (only loopback: the API is the pod's alone)")
	cmd.Flags().StringVar(&flags.daprStore, "dapr-store", "", "also serve Dapr's lock API (POST /v1.0-alpha1/lock/STORE, /unlock/STORE) for this lock store name, so that an app written for Dapr can use the agent as its Dapr HTTP port")
	cmd.Flags().IntVar(&flags.procs, "procs", agentProcs, "how many threads run the agent's Go code at once (GOMAXPROCS); 0: Go's default. The GOMAXPROCS environment variable is used when this flag is not given")
	return cmd
}

// setProcs applies --procs, or $GOMAXPROCS when the flag was not given.
func (f agentFlags) setProcs(cmd *cobra.Command) error {
	switch {
	case f.procs < 0:
		return exit(ExitUsage, fmt.Errorf("--procs %d: want 0 or more", f.procs))
	case f.procs == 0, os.Getenv("GOMAXPROCS") != "" && !cmd.Flags().Changed("procs"):
		return nil
	}
	runtime.GOMAXPROCS(f.procs)
	return nil
}

// runAgent serves until SIGINT or SIGTERM.
func runAgent(cmd *cobra.Command, target *targetFlags, flags agentFlags, stderr io.Writer) error {
	if err := flags.setProcs(cmd); err != nil {
		return err
	}
	listeners, err := flags.listeners(cmd.Context())
	if err != nil {
		return err
	}
	defer closeListeners(listeners)
	if addr := target.take.metricsAddr; addr != "" {
		reg, srv, err := serveMetrics(addr, stderr)
		if err != nil {
			return err
		}
		defer srv.close()
		target.take.metrics = reg
	}
	opts, err := target.options()
	if err != nil {
		return err
	}
	locks, err := agentLocksOf(target, opts)
	if err != nil {
		return err
	}
	defer func() { _ = locks.close() }()
	ctx, stop := signal.NotifyContext(cmd.Context(), stopSignals...)
	defer stop()
	s := agent.NewServer(locks, agent.Options{Unavailable: redisFailed, Logger: agentLogger(stderr), DaprStore: flags.daprStore})
	for _, ln := range listeners {
		printf(stderr, "lockctl agent: serving on %s %s\n", ln.Addr().Network(), ln.Addr())
	}
	return agent.Serve(ctx, s, listeners...)
}

// listeners opens --socket and --listen.
func (f agentFlags) listeners(ctx context.Context) ([]net.Listener, error) {
	mode, err := strconv.ParseUint(f.socketMode, 8, 32)
	if err != nil || mode > 0o777 {
		return nil, exit(ExitUsage, fmt.Errorf("--socket-mode %q: want an octal file mode such as 0600", f.socketMode))
	}
	if f.socket == "" && f.listen == "" {
		return nil, exit(ExitUsage, errors.New("give --socket or --listen"))
	}
	var lns []net.Listener
	if f.socket != "" {
		ln, err := agent.ListenUnix(ctx, f.socket, fs.FileMode(mode))
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	if f.listen != "" {
		ln, err := listenLoopback(ctx, f.listen)
		if err != nil {
			closeListeners(lns)
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// listenLoopback listens on addr, which must be a loopback address: the
// API grants locks to whoever reaches it.
func listenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exit(ExitUsage, fmt.Errorf("--listen %q: %w", addr, err))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, exit(ExitUsage, fmt.Errorf("--listen %q: only a loopback address (127.0.0.1, ::1, localhost): the API is the pod's alone", addr))
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	return ln, nil
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// agentLogger writes the agent's notes (a lease released for want of
// keep-alives) to stderr, one line each.
func agentLogger(w io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) { printf(w, "lockctl agent: %s%s\n", prefix, args) }, funcr.Options{})
}

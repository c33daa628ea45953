/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// Timeouts of the --ready-addr server: probes are tiny requests from the
// kubelet, so anything slow is a client to drop.
const (
	readyHeaderTimeout = 5 * time.Second
	readyIOTimeout     = 10 * time.Second
	readyIdleTimeout   = 60 * time.Second
)

// readiness is what `run --ready-addr` serves, for probes: GET /readyz
// answers 200 only while COMMAND runs under a held lease, and 503 while
// lockctl waits for the lock, once a stop signal came, once the lease is
// lost and once COMMAND has exited; GET /livez answers 200 while lockctl
// runs. A Deployment whose pods probe /readyz has one Ready pod, the
// holder, and its Service routes only to it.
//
// Readiness goes one way in a lockctl's life: 503, then 200, then 503 for
// good (lockctl exits soon after).
//
// A nil *readiness (no --ready-addr) does nothing.
type readiness struct {
	srv    *http.Server
	served chan struct{} // closed when Serve returns

	mu sync.Mutex
	// lease is the lease COMMAND runs under; nil while waiting and once
	// stopped.
	lease *lock.Lease
	// why is the 503 body.
	why string
	// stopped: /readyz answers 503 for good.
	stopped bool
}

// serveReadiness listens on addr and serves /readyz (503 "waiting for the
// lock" until serving is called) and /livez.
func serveReadiness(addr string, stderr io.Writer) (*readiness, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, exit(ExitUsage, fmt.Errorf("--ready-addr %q: want HOST:PORT or :PORT, e.g. :8090: %w", addr, err))
	}
	ln, err := net.Listen("tcp", addr) //nolint:noctx // a listener for the whole life of the process; there is no context to end it but Close
	if err != nil {
		return nil, exit(ExitError, fmt.Errorf("--ready-addr: %w", err))
	}
	r := &readiness{why: "waiting for the lock", served: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", r.readyz) // GET patterns match HEAD too
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusOK, "ok") })
	var protocols http.Protocols
	protocols.SetHTTP1(true) // no HTTP/2 (nor h2c): probes need none of it, and it has had denial-of-service flaws
	r.srv = &http.Server{
		Handler:           mux,
		Protocols:         &protocols,
		ReadHeaderTimeout: readyHeaderTimeout,
		ReadTimeout:       readyIOTimeout,
		WriteTimeout:      readyIOTimeout,
		IdleTimeout:       readyIdleTimeout,
		MaxHeaderBytes:    8 << 10,
	}
	printf(stderr, "lockctl: serving /readyz and /livez on %s\n", ln.Addr())
	go func() {
		defer close(r.served)
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			// /livez fails from now on: the kubelet restarts the container.
			printf(stderr, "lockctl: --ready-addr server stopped: %v\n", err)
		}
	}()
	return r, nil
}

// serving makes /readyz answer 200 while lease is held: COMMAND runs under
// it.
func (r *readiness) serving(lease *lock.Lease) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.lease = lease
	}
}

// stop makes /readyz answer 503 for good, saying why.
func (r *readiness) stop(why string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped { // the first reason stays
		r.lease, r.why, r.stopped = nil, why, true
	}
}

// close stops the server: lockctl is exiting.
func (r *readiness) close() {
	if r == nil {
		return
	}
	r.stop("exiting")
	_ = r.srv.Close() // lockctl exits next: connections in flight end with it
	<-r.served
}

// readyz answers 200 while COMMAND runs under a lease that is still held.
// lease.Err checks the local deadline itself, so a holder that was paused
// (SIGSTOP, a stalled node) past its deadline answers 503 from its first
// request after resuming, before the watchdog or the deadline timer ran.
func (r *readiness) readyz(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	lease, why := r.lease, r.why
	r.mu.Unlock()
	if lease == nil {
		reply(w, http.StatusServiceUnavailable, "not ready: "+why)
		return
	}
	if err := lease.Err(); err != nil {
		reply(w, http.StatusServiceUnavailable, "not ready: the lease ended")
		return
	}
	reply(w, http.StatusOK, fmt.Sprintf("ready: holding %s, fence %d", lease.Key(), lease.Fence()))
}

func reply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body+"\n") // a prober that hung up has its answer in the status line
}

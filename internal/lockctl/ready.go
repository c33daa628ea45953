/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"io"
	"net/http"
	"sync"
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
	http *httpServer

	mu sync.Mutex
	// held is the hold COMMAND runs under (a lease, or several); nil
	// while waiting and once stopped.
	held hold
	// why is the 503 body.
	why string
	// stopped: /readyz answers 503 for good.
	stopped bool
}

// serveReadiness listens on addr and serves /readyz (503 "waiting for the
// lock" until serving is called) and /livez.
func serveReadiness(addr string, stderr io.Writer) (*readiness, error) {
	r := &readiness{why: "waiting for the lock"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", r.readyz) // GET patterns match HEAD too
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusOK, "ok") })
	// If the server stops, /livez fails from then on: the kubelet restarts
	// the container.
	var err error
	if r.http, err = serveHTTP("--ready-addr", addr, "/readyz and /livez", mux, stderr); err != nil {
		return nil, err
	}
	return r, nil
}

// serving makes /readyz answer 200 while h is held: COMMAND runs under
// it.
func (r *readiness) serving(h hold) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.held = h
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
		r.held, r.why, r.stopped = nil, why, true
	}
}

// close stops the server: lockctl is exiting.
func (r *readiness) close() {
	if r == nil {
		return
	}
	r.stop("exiting")
	r.http.close()
}

// readyz answers 200 while COMMAND runs under a lease that is still held.
// A lease's Err checks the local deadline itself, so a holder that was paused
// (SIGSTOP, a stalled node) past its deadline answers 503 from its first
// request after resuming, before the watchdog or the deadline timer ran.
func (r *readiness) readyz(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	held, why := r.held, r.why
	r.mu.Unlock()
	if held == nil {
		reply(w, http.StatusServiceUnavailable, "not ready: "+why)
		return
	}
	if err := held.Err(); err != nil {
		reply(w, http.StatusServiceUnavailable, "not ready: the lease ended")
		return
	}
	reply(w, http.StatusOK, "ready: "+held.String())
}

func reply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body+"\n") // a prober that hung up has its answer in the status line
}

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
	"time"
)

// Timeouts of lockctl's HTTP servers (--ready-addr, --metrics-addr): their
// clients are a kubelet's probes and Prometheus's scrapes, tiny requests,
// so anything slow is a client to drop.
const (
	httpHeaderTimeout = 5 * time.Second
	httpIOTimeout     = 10 * time.Second
	httpIdleTimeout   = 60 * time.Second
)

// httpServer is one of lockctl's HTTP servers, for the life of the command.
type httpServer struct {
	srv    *http.Server
	served chan struct{} // closed when Serve returns
}

// serveHTTP listens on addr, the value of flag, and serves handler, saying
// on stderr that it serves what there (tests and people read the address
// of :0 there).
func serveHTTP(flag, addr, what string, handler http.Handler, stderr io.Writer) (*httpServer, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, exit(ExitUsage, fmt.Errorf("%s %q: want HOST:PORT or :PORT, e.g. :8090: %w", flag, addr, err))
	}
	ln, err := net.Listen("tcp", addr) //nolint:noctx // a listener for the whole life of the process; there is no context to end it but Close
	if err != nil {
		return nil, exit(ExitError, fmt.Errorf("%s: %w", flag, err))
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true) // no HTTP/2 (nor h2c): probes and scrapes need none of it, and it has had denial-of-service flaws
	s := &httpServer{served: make(chan struct{}), srv: &http.Server{
		Handler:           handler,
		Protocols:         &protocols,
		ReadHeaderTimeout: httpHeaderTimeout,
		ReadTimeout:       httpIOTimeout,
		WriteTimeout:      httpIOTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    8 << 10,
	}}
	printf(stderr, "lockctl: serving %s on %s\n", what, ln.Addr())
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			printf(stderr, "lockctl: %s server stopped: %v\n", flag, err)
		}
	}()
	return s, nil
}

// close stops the server: lockctl is exiting, and connections in flight
// end with it. A nil server does nothing.
func (s *httpServer) close() {
	if s == nil {
		return
	}
	_ = s.srv.Close()
	<-s.served
}

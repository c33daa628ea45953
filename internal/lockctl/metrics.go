/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves GET /metrics on addr (--metrics-addr): the lock
// library's metrics, which lockctl registers on the registry it returns
// (lock.WithMetrics), and the Go runtime's and the process's, for
// Prometheus (a PodMonitor on the pods that run lockctl). The dashboard's
// lease panels and the RedleaseLeasesLost alert read the library's.
func serveMetrics(addr string, stderr io.Writer) (*prometheus.Registry, *httpServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv, err := serveHTTP("--metrics-addr", addr, "/metrics", mux, stderr)
	if err != nil {
		return nil, nil, err
	}
	return reg, srv, nil
}

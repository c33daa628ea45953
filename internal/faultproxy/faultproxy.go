// Package faultproxy puts an in-process toxiproxy between a test's clients
// and a real server, on loopback, to add latency, swallow traffic or cut
// the server off — the network faults that process signals (kill, SIGSTOP)
// cannot make, or not without stopping a server other tests share.
package faultproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy forwards 127.0.0.1:<port> to an upstream address.
type Proxy struct {
	proxy *toxiproxy.Proxy
	t     testing.TB
}

// New starts a proxy to upstream, stopped when t ends.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "redlease-test", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("faultproxy: starting a proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{proxy: p, t: t}
}

// Addr is the address clients dial instead of the upstream.
func (p *Proxy) Addr() string { return p.proxy.Listen }

// Latency delays every reply (server → client) by d, on open and new
// connections, until Reset.
func (p *Proxy) Latency(d time.Duration) {
	p.add("latency", "downstream", fmt.Sprintf(`{"latency": %d}`, d.Milliseconds()))
}

// BlackHole swallows everything clients send (client → server) and never
// answers, until Reset: a partition that leaves connections open.
func (p *Proxy) BlackHole() {
	p.add("timeout", "upstream", `{"timeout": 0}`)
}

// Cut closes every connection through the proxy and refuses new ones until
// Restore: the server as its clients see it while it is down, or
// restarting.
func (p *Proxy) Cut() { p.proxy.Stop() }

// Restore accepts connections again after Cut, on the same address.
func (p *Proxy) Restore() {
	p.t.Helper()
	if err := p.proxy.Start(); err != nil {
		p.t.Fatalf("faultproxy: listening again on %s: %v", p.Addr(), err)
	}
}

// Redirect closes every connection through the proxy and sends new ones to
// upstream: clients that dial one address (a DNS name, a virtual IP) find
// another server there, as after a failover behind that address.
func (p *Proxy) Redirect(upstream string) {
	p.Cut()
	p.proxy.Lock()
	p.proxy.Upstream = upstream
	p.proxy.Unlock()
	p.Restore()
}

// Reset removes every fault.
func (p *Proxy) Reset() { p.proxy.Toxics.ResetToxics(context.Background()) }

func (p *Proxy) add(kind, stream, attributes string) {
	p.t.Helper()
	body := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "toxicity": 1, "attributes": %s}`, kind+"-"+stream, kind, stream, attributes)
	if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		p.t.Fatalf("faultproxy: adding %s: %v", kind, err)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/redistest"
)

func TestParseCIDRs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "any"},
		{" , ", "any"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{" 10.1.2.3/8 , fd00::/8,192.0.2.7 ", "10.0.0.0/8,fd00::/8,192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
	} {
		e, err := ParseCIDRs(c.in)
		if err != nil || e.String() != c.want {
			t.Errorf("ParseCIDRs(%q) = %v, %v; want %s", c.in, e, err, c.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "redis.example", "10.0.0.0/8,nope"} {
		if e, err := ParseCIDRs(bad); err == nil {
			t.Errorf("ParseCIDRs(%q) = %v, want an error", bad, e)
		}
	}
	if _, err := ParseCIDRs("10.0.0.0/8,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("the error does not name the bad item: %v", err)
	}
}

// TestEgressWrap checks the dialer against a fake resolver and base dialer:
// only allowed IPs reach base, in order, as IP:port.
func TestEgressWrap(t *testing.T) {
	e, err := ParseCIDRs("192.0.2.0/24,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	e.lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		switch host {
		case "mixed.test":
			return []netip.Addr{
				netip.MustParseAddr("198.51.100.1"),
				netip.MustParseAddr("::ffff:192.0.2.1"), // as LookupNetIP returns IPv4
				netip.MustParseAddr("10.0.0.1"),
				netip.MustParseAddr("2001:db8::2"),
			}, nil
		case "inside.test":
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")}, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	var dialed []string
	refuse := errors.New("refused by the test")
	dial := e.Wrap(func(_ context.Context, _, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		return nil, refuse
	})

	if _, err := dial(ctxT(t), "tcp", "mixed.test:6379"); !errors.Is(err, refuse) {
		t.Errorf("mixed.test: %v, want the base dialer's first error", err)
	}
	if want := []string{"192.0.2.1:6379", "[2001:db8::2]:6379"}; !slices.Equal(dialed, want) {
		t.Errorf("dialed %v, want %v", dialed, want)
	}

	for _, c := range []struct{ network, addr, msg string }{
		{"tcp", "inside.test:6379", "inside.test:6379 (resolves to 10.0.0.1, fd00::1)"},
		{"tcp", "10.0.0.1:6379", "10.0.0.1:6379"},
		{"tcp", "[::ffff:10.0.0.1]:6379", "[::ffff:10.0.0.1]:6379"},
		{"unix", "/run/redis.sock", "unix /run/redis.sock"},
	} {
		dialed = nil
		_, err := dial(ctxT(t), c.network, c.addr)
		if !errors.Is(err, ErrAddressNotAllowed) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "--allowed-redis-cidrs") {
			t.Errorf("%s %s: %v, want ErrAddressNotAllowed naming %q", c.network, c.addr, err, c.msg)
		}
		if len(dialed) != 0 {
			t.Errorf("%s: the base dialer was called with %v", c.addr, dialed)
		}
		if err := e.Allowed(ctxT(t), c.addr); c.network == "tcp" && !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("Allowed(%s) = %v", c.addr, err)
		}
	}
	if err := e.Allowed(ctxT(t), "mixed.test:6379"); err != nil {
		t.Errorf("Allowed(mixed.test) = %v", err)
	}
	var none *Egress
	if err := none.Allowed(ctxT(t), "10.0.0.1:6379"); err != nil {
		t.Errorf("a nil Egress refused: %v", err)
	}
}

// TestEgressPoolRefusesBeforeConnecting: an address outside the allowed
// networks, by IP or by a name resolving to it, is refused without a
// connection, and StatusText says why.
func TestEgressPoolRefusesBeforeConnecting(t *testing.T) {
	peer := startPeer(t, true)
	e, err := ParseCIDRs("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, PoolOptions{Egress: e})
	_, port, _ := net.SplitHostPort(peer.Addr())
	for _, addr := range []string{peer.Addr(), net.JoinHostPort("localhost", port)} {
		_, err := Probe(ctxT(t), poolClient(t, p, addr, Target{Addr: addr}))
		if !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("%s: %v, want ErrAddressNotAllowed", addr, err)
		}
		if got := StatusText(err); got != "address not allowed (outside --allowed-redis-cidrs)" {
			t.Errorf("%s: StatusText = %q", addr, got)
		}
	}
	if n := peer.accepts.Load(); n != 0 {
		t.Errorf("the listener accepted %d connections", n)
	}
}

// TestEgressPoolAllows: allowed addresses connect, by IP and by name, over
// TLS too (go-redis adds TLS only in its own dialer, which Egress wraps),
// and through a test Dialer that Egress wraps.
func TestEgressPoolAllows(t *testing.T) {
	plain := redistest.StartStandalone(t)
	secure := redistest.StartStandalone(t, redistest.WithTLS())
	e, err := ParseCIDRs("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, PoolOptions{Egress: e})
	localhost := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		return net.JoinHostPort("localhost", port)
	}
	tlsCreds := Credentials{TLS: &TLS{CAPEM: secure.CACertPEM()}}
	for _, tg := range []Target{
		{Addr: plain.Addr()},
		{Addr: localhost(plain.Addr())},
		{Addr: secure.Addr(), Credentials: tlsCreds},
		{Addr: localhost(secure.Addr()), Credentials: tlsCreds},
	} {
		if _, err := Probe(ctxT(t), poolClient(t, p, tg.Addr, tg)); err != nil {
			t.Errorf("%s (TLS %v): %v", tg.Addr, tg.Credentials.TLS != nil, err)
		}
	}

	// The certificate is checked against the name in the address, not the
	// IP Egress dialed (the server's certificate holds 127.0.0.1).
	named, err := ParseCIDRs("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	named.lookup = func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	_, port, _ := net.SplitHostPort(secure.Addr())
	other := Target{Addr: net.JoinHostPort("other.redlease.test", port), Credentials: tlsCreds}
	if _, err := Probe(ctxT(t), poolClient(t, newPool(t, PoolOptions{Egress: named}), "o", other)); StatusText(err) != "TLS handshake failed: certificate name mismatch" {
		t.Errorf("%s resolving to 127.0.0.1: %v, want a name mismatch", other.Addr, err)
	}

	// A test Dialer (mapping a TEST-NET address to the server) is the base
	// Egress wraps: the check sees the address the resource named.
	var dialed []string
	mapDialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		var d net.Dialer
		return d.DialContext(ctx, network, plain.Addr())
	}
	testNet, err := ParseCIDRs("192.0.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	mapped := newPool(t, PoolOptions{Dialer: mapDialer, Egress: testNet})
	if _, err := Probe(ctxT(t), poolClient(t, mapped, "o", Target{Addr: "192.0.2.1:6379"})); err != nil {
		t.Errorf("through the test Dialer: %v", err)
	}
	refused := newPool(t, PoolOptions{Dialer: mapDialer, Egress: e})
	if _, err := Probe(ctxT(t), poolClient(t, refused, "o", Target{Addr: "192.0.2.1:6379"})); !errors.Is(err, ErrAddressNotAllowed) {
		t.Errorf("192.0.2.1 with 127.0.0.0/8 allowed: %v", err)
	}
	if !slices.Equal(dialed, []string{"192.0.2.1:6379"}) {
		t.Errorf("the test Dialer was called with %v, want 192.0.2.1:6379 once", dialed)
	}
}

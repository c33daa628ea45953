/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrAddressNotAllowed is returned, wrapped with the address, for a dial to
// an address outside the networks the operator was allowed to reach.
var ErrAddressNotAllowed = errors.New("redisprobe: address not allowed (outside --allowed-redis-cidrs)")

// Egress is the set of networks the controller may connect to. Resources
// name the addresses, so without it the controller connects wherever a
// namespace editor points it (a confused deputy inside the cluster network).
// A nil *Egress allows every network.
type Egress struct {
	prefixes []netip.Prefix
	// lookup resolves a host; nil means net.DefaultResolver (tests replace
	// it to get several addresses for one name).
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ParseCIDRs reads a comma-separated list of CIDRs (10.0.0.0/8, fd00::/8)
// or single IPs. An empty list returns nil: every network is allowed.
func ParseCIDRs(list string) (*Egress, error) {
	var e Egress
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := parsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("redisprobe: %q is not a CIDR such as 10.0.0.0/8 or fd00::/8: %w", item, err)
		}
		e.prefixes = append(e.prefixes, p)
	}
	if len(e.prefixes) == 0 {
		return nil, nil
	}
	return &e, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// String lists the allowed networks, or "any" for a nil Egress.
func (e *Egress) String() string {
	if e == nil {
		return "any"
	}
	s := make([]string, len(e.prefixes))
	for i, p := range e.prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Allowed reports, as an error wrapping ErrAddressNotAllowed, whether addr
// (host:port, the host a name or an IP) resolves to no allowed IP. A failed
// lookup is returned as it is. The controller can use it to refuse an
// address before dialing; the Pool's dialer checks every dial anyway.
func (e *Egress) Allowed(ctx context.Context, addr string) error {
	_, err := e.resolve(ctx, "tcp", addr)
	return err
}

// Wrap returns a dialer that dials through base only the allowed IPs addr
// resolves to, in the resolver's order, and returns the first error if none
// connects. base receives an IP:port, never a name: resolving once and
// dialing the checked IP leaves no room for a DNS answer that changes
// between the check and the dial. A nil Egress returns base unchanged.
func (e *Egress) Wrap(base func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if e == nil {
		return base
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		targets, err := e.resolve(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		var first error
		for _, t := range targets {
			conn, err := base(ctx, network, t)
			if err == nil {
				return conn, nil
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// resolve returns the allowed IP:port addresses of addr, or an error
// wrapping ErrAddressNotAllowed when there is none.
func (e *Egress) resolve(ctx context.Context, network, addr string) ([]string, error) {
	if e == nil {
		return []string{addr}, nil
	}
	var ipNetwork string
	switch network {
	case "tcp":
		ipNetwork = "ip"
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	default: // a unix socket has no IP to check
		return nil, fmt.Errorf("%w: %s %s", ErrAddressNotAllowed, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("redisprobe: address %q: %w", addr, err)
	}
	portNum, err := net.DefaultResolver.LookupPort(ctx, network, port)
	if err != nil {
		return nil, fmt.Errorf("redisprobe: address %q: %w", addr, err)
	}
	lookup := e.lookup
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	ips, err := lookup(ctx, ipNetwork, host)
	if err != nil {
		return nil, fmt.Errorf("redisprobe: resolving %s: %w", host, err)
	}
	var out []string
	for _, ip := range ips {
		// LookupNetIP returns IPv4 addresses in their IPv6-mapped form,
		// which an IPv4 prefix does not contain.
		ip = ip.Unmap()
		if e.contains(ip) {
			out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(portNum)))
		}
	}
	if len(out) == 0 {
		if _, err := netip.ParseAddr(host); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrAddressNotAllowed, addr)
		}
		return nil, fmt.Errorf("%w: %s (resolves to %s)", ErrAddressNotAllowed, addr, joinAddrs(ips))
	}
	return out, nil
}

// contains reports whether ip is in an allowed prefix. A zone (fe80::1%eth0)
// names an interface, not a network: it is not part of the check.
func (e *Egress) contains(ip netip.Addr) bool {
	ip = ip.WithZone("")
	for _, p := range e.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func joinAddrs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.Unmap().String()
	}
	return strings.Join(s, ", ")
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// Credentials are what a client sends and checks: the AUTH user and
// password, and TLS. The zero value is plain TCP without AUTH.
type Credentials struct {
	Username string
	Password string
	// TLS, when not nil, turns TLS on.
	TLS *TLS
}

// TLS configures TLS to a server.
type TLS struct {
	// CAPEM is a PEM bundle of the CAs that sign the servers' certificates;
	// empty means the system roots.
	CAPEM []byte
	// ServerName is checked against the server certificate; empty means the
	// host of each address.
	ServerName string
	// InsecureSkipVerify accepts any certificate (tests only).
	InsecureSkipVerify bool
	// ClientCert, when not nil, is presented to the servers (mutual TLS).
	ClientCert *tls.Certificate
}

// ErrBadCA is returned for a CA bundle that holds no PEM certificate.
var ErrBadCA = errors.New("redisconn: the CA bundle holds no PEM certificate")

// Config builds the client TLS config for addr: the server name checked is
// ServerName, else addr's host. An empty addr leaves an empty server name
// to crypto/tls, which then checks the host of each address dialed (a
// client of several servers: Sentinel, Cluster). A nil t is plain TCP: nil
// config, no error.
func (t *TLS) Config(addr string) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // G402: only when the resource asks for it (tests)
	if cfg.ServerName == "" && addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("redisconn: address %q: %w", addr, err)
		}
		cfg.ServerName = host
	}
	if len(t.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(t.CAPEM) {
			return nil, ErrBadCA
		}
		cfg.RootCAs = pool
	}
	if t.ClientCert != nil {
		cfg.Certificates = []tls.Certificate{*t.ClientCert}
	}
	return cfg, nil
}

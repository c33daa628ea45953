/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package certtest makes throw-away certificate authorities and the server
// and client certificates they sign, for tests of TLS: redistest's
// servers, the mutual TLS of Redis clients and the metrics endpoint, and
// the node's stand-in for a registry.
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority, valid for a day, that signs server and
// client certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a CA, failing t when it cannot.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewAuthority(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// NewAuthority makes a CA: NewCA for code without a testing.TB (a test
// server's harness).
func NewAuthority(name string) (*CA, error) {
	ca := &CA{}
	var err error
	ca.cert, ca.key, ca.pem, err = sign(nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	return ca, err
}

// PEM returns the CA's certificate.
func (ca *CA) PEM() []byte { return ca.pem }

// File writes the CA's certificate into a temporary file of t and returns
// its path (for a server's tls-ca-cert-file).
func (ca *CA) File(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(path, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ClientCert returns a client certificate for commonName signed by ca,
// and its private key, both PEM.
func (ca *CA) ClientCert(t testing.TB, commonName string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: commonName},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// ServerPEM returns a server certificate signed by ca for hosts (DNS
// names or IP addresses; the first is its common name) and its private
// key, both PEM.
func (ca *CA) ServerPEM(hosts ...string) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if len(hosts) > 0 {
		tmpl.Subject.CommonName = hosts[0]
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl)
}

// ServerCert is ServerPEM as a tls.Certificate, for a Go server.
func (ca *CA) ServerCert(t testing.TB, hosts ...string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.ServerPEM(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// issue signs tmpl with ca and returns the certificate and its new key,
// both PEM.
func (ca *CA) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	_, key, certPEM, err := sign(ca.cert, ca.key, tmpl)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// sign makes a certificate from tmpl, valid from an hour ago for a day,
// signed by parent (self-signed when parent is nil).
func sign(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSServerName is the name in the certificate of a server started
// WithTLS (besides 127.0.0.1 and localhost), for tests of serverName.
const TLSServerName = "redis.redlease.test"

// WithTLS makes a standalone server speak TLS only (its port is the
// tls-port; the plain port is off), with a certificate from a CA made for
// that server. Clients from Server.Client and the harness trust the CA;
// CACertPEM gives it to others (a Kubernetes Secret, say).
func WithTLS() Option { return func(c *config) { c.tls = true } }

// CACertPEM returns the PEM CA certificate a WithTLS server's certificate
// chains to, or nil for a plain server.
func (s *Server) CACertPEM() []byte { return s.caPEM }

// TLSConfig returns a client TLS configuration trusting the server's CA, or
// nil for a plain server.
func (s *Server) TLSConfig() *tls.Config {
	if s.caPEM == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	return &tls.Config{RootCAs: pool, ServerName: TLSServerName, MinVersion: tls.VersionTLS12}
}

// tlsConf writes a CA and a server certificate into the server's home and
// returns the directives that serve TLS only.
func tlsConf(s *Server) ([]string, error) {
	if s.caPEM == nil {
		ca, caKey, caPEM, err := newCert(nil, nil, &x509.Certificate{
			Subject: pkix.Name{CommonName: "redistest CA"}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		})
		if err != nil {
			return nil, err
		}
		_, key, certPEM, err := newCert(ca, caKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: TLSServerName},
			DNSNames:    []string{TLSServerName, "localhost"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		for name, data := range map[string][]byte{
			"ca.crt": caPEM, "tls.crt": certPEM,
			"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		} {
			if err := os.WriteFile(filepath.Join(s.home, name), data, 0o600); err != nil {
				return nil, err
			}
		}
		s.caPEM = caPEM
	}
	return []string{
		"port 0",
		fmt.Sprintf("tls-port %d", s.port),
		"tls-cert-file " + quote(filepath.Join(s.home, "tls.crt")),
		"tls-key-file " + quote(filepath.Join(s.home, "tls.key")),
		"tls-ca-cert-file " + quote(filepath.Join(s.home, "ca.crt")),
		"tls-auth-clients no",
	}, nil
}

// newCert makes a certificate from tmpl signed by parent (self-signed when
// parent is nil) and returns it, its key and its PEM.
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
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

package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redlease/redlease/internal/redisconn/certtest"
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
		ca, err := certtest.NewAuthority("redistest CA")
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM, err := ca.ServerPEM(TLSServerName, "localhost", "127.0.0.1")
		if err != nil {
			return nil, err
		}
		for name, data := range map[string][]byte{"ca.crt": ca.PEM(), "tls.crt": certPEM, "tls.key": keyPEM} {
			if err := os.WriteFile(filepath.Join(s.home, name), data, 0o600); err != nil {
				return nil, err
			}
		}
		s.caPEM = ca.PEM()
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

package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redisconn/certtest"
	"github.com/redlease/redlease/internal/redistest"
)

// TestMetricsCertificateAndHTTP2: with --metrics-cert-path the manager's
// metrics endpoint serves the mounted certificate (as a cert-manager
// Secret would be mounted), and offers only HTTP/1.1 unless
// --enable-http2.
func TestMetricsCertificateAndHTTP2(t *testing.T) {
	env := kubetest.Start(t)
	kubeconfig := env.KubeconfigFile(t)
	dir := t.TempDir()
	certPEM, keyPEM := certtest.NewCA(t, "metrics-ca").ClientCert(t, "redlease-metrics")
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(certPEM)
	for _, tc := range []struct {
		http2 bool
		want  string // the protocol negotiated when the client offers h2 first
	}{{false, "http/1.1"}, {true, "h2"}} {
		addr := redistest.FreeAddr(t)
		args := []string{"--metrics-bind-address=" + addr, "--metrics-secure=true", "--metrics-cert-path=" + dir,
			"--leader-elect=false", "--enable-http2=" + strconv.FormatBool(tc.http2)}
		startManager(t, kubeconfig, "default", args...)
		state := tlsHandshake(t, addr)
		if len(state.PeerCertificates) == 0 || !bytes.Equal(state.PeerCertificates[0].Raw, block.Bytes) {
			t.Errorf("--enable-http2=%v: the metrics endpoint does not serve the certificate in --metrics-cert-path", tc.http2)
		}
		if state.NegotiatedProtocol != tc.want {
			t.Errorf("--enable-http2=%v: negotiated %q, want %q", tc.http2, state.NegotiatedProtocol, tc.want)
		}
	}
}

// tlsHandshake connects to addr, offering HTTP/2 first, until the server
// answers (at most 30s), and returns the connection's state.
func tlsHandshake(t *testing.T, addr string) tls.ConnectionState {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}} //nolint:gosec // G402: the test compares the served certificate itself
		conn, err := d.DialContext(t.Context(), "tcp", addr)
		if err == nil {
			state := conn.(*tls.Conn).ConnectionState()
			_ = conn.Close() // only the handshake was needed
			return state
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics endpoint %s never answered: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/internal/redisconn/certtest"
)

// TestTLSConfig: the server name checked, the roots and the client
// certificate of a TLS config.
func TestTLSConfig(t *testing.T) {
	if cfg, err := (*redisconn.TLS)(nil).Config("a:1"); cfg != nil || err != nil {
		t.Errorf("nil TLS: %v, %v; want plain TCP", cfg, err)
	}
	cfg, err := (&redisconn.TLS{}).Config("redis-0.redis:6379")
	if err != nil || cfg.ServerName != "redis-0.redis" || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf("Config = %+v, %v; want the address's host, system roots, no client certificate", cfg, err)
	}
	cfg, err = (&redisconn.TLS{ServerName: "redis.svc"}).Config("10.0.0.1:6379")
	if err != nil || cfg.ServerName != "redis.svc" {
		t.Errorf("ServerName = %q, %v; want the configured one", cfg.ServerName, err)
	}
	if cfg, err = (&redisconn.TLS{}).Config(""); err != nil || cfg.ServerName != "" {
		t.Errorf("no address: ServerName %q, %v; want empty (crypto/tls takes each dialed host)", cfg.ServerName, err)
	}
	if _, err := (&redisconn.TLS{}).Config("no-port"); err == nil {
		t.Error("an address without a port was accepted")
	}
	if _, err := (&redisconn.TLS{CAPEM: []byte("not pem")}).Config("a:1"); !errors.Is(err, redisconn.ErrBadCA) {
		t.Errorf("bad CA: %v, want ErrBadCA", err)
	}
	ca := certtest.NewCA(t, "test CA")
	certPEM, keyPEM := ca.ClientCert(t, "pod")
	servers, _, err := redisconn.FromSecret(map[string][]byte{"ca.crt": ca.PEM(), "tls.crt": certPEM, "tls.key": keyPEM}, true, "", false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = servers.TLS.Config("a:1")
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Errorf("Config = %+v, %v; want the CA as roots and the client certificate", cfg, err)
	}
}

// TestFromSecret: every key of the credentials Secret lands where it
// belongs.
func TestFromSecret(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	certPEM, keyPEM := ca.ClientCert(t, "pod")
	full := map[string][]byte{
		v1alpha1.CredentialsUsername: []byte("tenant"), v1alpha1.CredentialsPassword: []byte("s3cret"),
		v1alpha1.CredentialsSentinelUsername: []byte("watcher"), v1alpha1.CredentialsSentinelPassword: []byte("s3ntinel"),
		v1alpha1.CredentialsCA: ca.PEM(), v1alpha1.CredentialsClientCert: certPEM, v1alpha1.CredentialsClientKey: keyPEM,
	}

	servers, sentinels, err := redisconn.FromSecret(full, true, "redis.svc", false)
	if err != nil {
		t.Fatal(err)
	}
	if servers.Username != "tenant" || servers.Password != "s3cret" || sentinels.Username != "watcher" || sentinels.Password != "s3ntinel" {
		t.Errorf("servers %q/%q, sentinels %q/%q", servers.Username, servers.Password, sentinels.Username, sentinels.Password)
	}
	if servers.TLS == nil || sentinels.TLS != servers.TLS || servers.TLS.ServerName != "redis.svc" ||
		string(servers.TLS.CAPEM) != string(ca.PEM()) || servers.TLS.ClientCert == nil {
		t.Errorf("TLS = %+v; want the server name, the CA and the client certificate, shared with the sentinels", servers.TLS)
	}
	servers, _, err = redisconn.FromSecret(full, false, "redis.svc", false)
	if err != nil || servers.TLS != nil {
		t.Errorf("TLS off: %+v, %v; want no TLS whatever the Secret holds", servers.TLS, err)
	}
}

// TestFromSecretDefaults: an empty Secret is the default user without
// AUTH, and TLS on the system roots without a client certificate.
func TestFromSecretDefaults(t *testing.T) {
	servers, sentinels, err := redisconn.FromSecret(nil, true, "", true)
	if err != nil || servers.Username != "" || servers.Password != "" || sentinels.Password != "" ||
		servers.TLS == nil || !servers.TLS.InsecureSkipVerify || servers.TLS.CAPEM != nil || servers.TLS.ClientCert != nil {
		t.Errorf("empty Secret: %+v, %+v, %v; want the default user, no AUTH, TLS with system roots and no client certificate", servers, sentinels, err)
	}
}

// TestFromSecretRefusesBadData: unusable TLS data is an error naming the
// key, never quoting the value.
func TestFromSecretRefusesBadData(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	certPEM, keyPEM := ca.ClientCert(t, "pod")
	otherCert, _ := ca.ClientCert(t, "other")
	for _, c := range []struct {
		name  string
		data  map[string][]byte
		names []string // in the error
	}{
		{"CA not PEM", map[string][]byte{"ca.crt": []byte("s3cret-not-pem")}, []string{`"ca.crt"`}},
		{"certificate without its key", map[string][]byte{"tls.crt": certPEM}, []string{`"tls.crt"`, `"tls.key"`}},
		{"key without its certificate", map[string][]byte{"tls.key": keyPEM}, []string{`"tls.crt"`, `"tls.key"`}},
		{"key of another certificate", map[string][]byte{"tls.crt": otherCert, "tls.key": keyPEM}, []string{`"tls.crt"`, `"tls.key"`}},
		{"key not PEM", map[string][]byte{"tls.crt": certPEM, "tls.key": []byte("s3cret-not-pem")}, []string{`"tls.key"`}},
	} {
		_, _, err := redisconn.FromSecret(c.data, true, "", false)
		if !errors.Is(err, redisconn.ErrInvalidSecret) {
			t.Errorf("%s: %v, want ErrInvalidSecret", c.name, err)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("%s: %q does not name %s", c.name, err, n)
			}
		}
		for _, v := range c.data {
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), string(v)) {
				t.Errorf("%s: the error quotes the Secret's data: %q", c.name, err)
			}
		}
	}
}

// TestFingerprint: every part of the credentials changes the fingerprint,
// and equal credentials have equal ones.
func TestFingerprint(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	certPEM, keyPEM := ca.ClientCert(t, "pod")
	withCert, _, err := redisconn.FromSecret(map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}, true, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	base := func() redisconn.Credentials {
		return redisconn.Credentials{Username: "u", Password: "x", TLS: &redisconn.TLS{ServerName: "a"}}
	}
	seen := map[string]string{base().Fingerprint(): "base"}
	for name, change := range map[string]func(*redisconn.Credentials){
		"username":    func(c *redisconn.Credentials) { c.Username = "v" },
		"password":    func(c *redisconn.Credentials) { c.Password = "y" },
		"no TLS":      func(c *redisconn.Credentials) { c.TLS = nil },
		"server name": func(c *redisconn.Credentials) { c.TLS.ServerName = "b" },
		"CA":          func(c *redisconn.Credentials) { c.TLS.CAPEM = ca.PEM() },
		"insecure":    func(c *redisconn.Credentials) { c.TLS.InsecureSkipVerify = true },
		"client cert": func(c *redisconn.Credentials) { c.TLS.ClientCert = withCert.TLS.ClientCert },
	} {
		c := base()
		change(&c)
		fp := c.Fingerprint()
		if other, dup := seen[fp]; dup {
			t.Errorf("%s: same fingerprint as %s", name, other)
		}
		seen[fp] = name
	}
	if a, b := base(), base(); a.Fingerprint() != b.Fingerprint() {
		t.Error("equal credentials, different fingerprints")
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestSharingKey: rest.Configs that reach the same API server as the same
// identity share a client, made separately (a config per goroutine) or
// not; any difference in where or as whom does not; a config with
// something that cannot be compared (a transport wrapper) shares only with
// itself.
func TestSharingKey(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://10.0.0.1:443", BearerTokenFile: "/var/run/secrets/token", BearerToken: "t1", //nolint:gosec // G101: a made-up token
			TLSClientConfig: rest.TLSClientConfig{CAFile: "/var/run/secrets/ca.crt"},
			Impersonate:     rest.ImpersonationConfig{UserName: "a", Extra: map[string][]string{"x": {"1"}, "y": {"2"}}}}
	}
	wrapped := base()
	wrapped.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return rt }
	exec := with(base(), func(c *rest.Config) { c.ExecProvider = &clientcmdapi.ExecConfig{Command: "aws"} })
	for _, tc := range []struct {
		name  string
		a, b  *rest.Config
		share bool
	}{
		{"one config", wrapped, wrapped, true},
		{"equal configs", base(), base(), true},
		{"a copy", base(), rest.CopyConfig(base()), true},
		{"the token file's content read at another time", base(), with(base(), func(c *rest.Config) { c.BearerToken = "t2" }), true},
		{"another server", base(), with(base(), func(c *rest.Config) { c.Host = "https://10.0.0.2:443" }), false},
		{"another impersonated user", base(), with(base(), func(c *rest.Config) { c.Impersonate.UserName = "b" }), false},
		{"other impersonated extras", base(), with(base(), func(c *rest.Config) { c.Impersonate.Extra["y"] = []string{"3"} }), false},
		{"another CA", base(), with(base(), func(c *rest.Config) { c.CAData = []byte("pem") }), false},
		{"another client key", with(base(), func(c *rest.Config) { c.KeyData = []byte("a") }), with(base(), func(c *rest.Config) { c.KeyData = []byte("b") }), false},
		{"a token without a file", with(base(), func(c *rest.Config) { c.BearerTokenFile = "" }),
			with(base(), func(c *rest.Config) { c.BearerTokenFile, c.BearerToken = "", "t2" }), false},
		{"a copy of a config with a transport wrapper", wrapped, rest.CopyConfig(wrapped), false},
		{"a copy of a config with an exec plugin", exec, rest.CopyConfig(exec), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := sharingKey(tc.a), sharingKey(tc.b); (a == b) != tc.share {
				t.Fatalf("shared = %v, want %v", !tc.share, tc.share)
			}
		})
	}
}

func with(c *rest.Config, change func(*rest.Config)) *rest.Config {
	change(c)
	return c
}

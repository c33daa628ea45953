/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
)

// TestParseURL: what a --redis URL becomes, and that refusals never quote
// the URL (it may carry a password).
func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url      string
		addr     string
		db       int32
		user     string
		password string
		tls      bool
		insecure bool
	}{
		{url: "redis://localhost:6379", addr: "localhost:6379"},
		{url: "redis://", addr: "localhost:6379"},
		{url: "redis://:pw@10.0.0.1:6380/3", addr: "10.0.0.1:6380", db: 3, password: "pw"},
		{url: "redis://u:p%40ss@h:1?db=2", addr: "h:1", db: 2, user: "u", password: "p@ss"},
		{url: "rediss://h:1", addr: "h:1", tls: true},
		{url: "rediss://h:1?skip_verify=true", addr: "h:1", tls: true, insecure: true},
		{url: "redis://[::1]:7000", addr: "[::1]:7000"},
	} {
		conn, creds, err := redisconn.ParseURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if conn.Mode != v1alpha1.RedisModeStandalone || !slices.Equal(conn.Addresses, []string{c.addr}) || conn.DB != c.db ||
			creds.Username != c.user || creds.Password != c.password || (conn.TLS != nil) != c.tls || (creds.TLS != nil) != c.tls {
			t.Errorf("%s: %+v %+v", c.url, conn, creds)
		}
		if c.tls && (conn.TLS.InsecureSkipVerify != c.insecure || creds.TLS.InsecureSkipVerify != c.insecure || creds.TLS.ServerName != "") {
			t.Errorf("%s: TLS %+v / %+v, want skip_verify %v and the URL's host as server name", c.url, conn.TLS, creds.TLS, c.insecure)
		}
	}
	for _, bad := range []string{
		"http://h:1", "unix:///tmp/redis.sock", "redis://:s3cret@h:1?dial_timeout=3", "redis://:s3cret@h:port",
		"redis://:s3cret@h:1/x", "redis://:s3cret@h:1?skip_verify=true", "redis://:s3cret@h:1/1/2",
	} {
		_, _, err := redisconn.ParseURL(bad)
		if !errors.Is(err, redisconn.ErrInvalidURL) {
			t.Errorf("%s: %v, want ErrInvalidURL", bad, err)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error quotes the password: %v", bad, err)
		}
	}
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
)

// ErrInvalidURL reports a Redis URL ParseURL refuses. Its messages never
// quote the URL, which may hold a password.
var ErrInvalidURL = errors.New("redisconn: invalid Redis URL")

// urlParams are the query parameters ParseURL takes; go-redis knows more
// (timeouts, pool sizes), which NewUniversal would not apply, so they are
// refused rather than silently dropped.
var urlParams = map[string]bool{"db": true, "skip_verify": true}

// ParseURL reads redis://[[user]:password@]host[:port][/db] (rediss:// for
// TLS, checked against the system roots and the URL's host; the parameter
// skip_verify=true accepts any certificate, for tests) into a Standalone
// connection of one server and its credentials, for NewUniversal. Host and
// port default to localhost:6379, db to 0; the query parameter db=N is the
// same as the path /N.
func ParseURL(raw string) (v1alpha1.ConnectionStatus, Credentials, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // its message quotes the URL
			err = ue.Err
		}
		return v1alpha1.ConnectionStatus{}, Credentials{}, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return v1alpha1.ConnectionStatus{}, Credentials{}, fmt.Errorf("%w: scheme %q: want redis:// or rediss://", ErrInvalidURL, u.Scheme)
	}
	for p := range u.Query() {
		if !urlParams[p] {
			return v1alpha1.ConnectionStatus{}, Credentials{}, fmt.Errorf("%w: query parameter %q is not supported (only db and skip_verify)", ErrInvalidURL, p)
		}
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return v1alpha1.ConnectionStatus{}, Credentials{}, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	c := v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{o.Addr}, DB: int32(o.DB)} //nolint:gosec // G115: go-redis parsed it as an int; Redis takes 0-15 and refuses the rest at SELECT
	creds := Credentials{Username: o.Username, Password: o.Password}
	if o.TLSConfig != nil {
		// The server name is left to Config: the URL's host, as go-redis
		// would check it.
		c.TLS = &v1alpha1.ConnectionTLS{InsecureSkipVerify: o.TLSConfig.InsecureSkipVerify}
		creds.TLS = &TLS{InsecureSkipVerify: o.TLSConfig.InsecureSkipVerify}
	}
	return c, creds, nil
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/pkg/lock"
)

// openRedis opens key on plain Redis: one URL, or several for Redlock,
// each with its own credentials. The clients come from redisconn, like a
// pod's.
func openRedis(urls, key string, opts []lock.Option) (*locker, error) {
	var (
		clients []redis.UniversalClient
		addrs   []string
	)
	for u := range strings.SplitSeq(urls, ",") {
		u = strings.TrimSpace(u)
		conn, creds, err := redisconn.ParseURL(u)
		if err != nil {
			redisconn.CloseAll(clients)
			return nil, exit(ExitUsage, fmt.Errorf("--redis %s: %w", redacted(u), err))
		}
		c, err := redisconn.NewUniversal(conn, creds, redisconn.Credentials{})
		if err != nil {
			redisconn.CloseAll(clients)
			return nil, exit(ExitUsage, fmt.Errorf("--redis %s: %w", redacted(u), err))
		}
		clients = append(clients, c...)
		addrs = append(addrs, conn.Addresses...)
	}
	var (
		l    *lock.Locker
		err  error
		mode = v1alpha1.RedisModeStandalone
	)
	if len(clients) == 1 {
		l, err = lock.New(clients[0], opts...)
	} else {
		mode = v1alpha1.RedisModeRedlock
		l, err = lock.NewRedlock(clients, opts...)
	}
	if err != nil {
		redisconn.CloseAll(clients)
		return nil, exit(ExitUsage, err)
	}
	d := description{mode: string(mode), addresses: addrs, ready: "n/a (no DistributedLock)"}
	return &locker{
		handle:   l.Mutex(key),
		describe: func() description { return d },
		Close: func() error {
			err := l.Close()
			redisconn.CloseAll(clients)
			if errors.Is(err, lock.ErrClosed) {
				return nil
			}
			return err
		},
	}, nil
}

// redacted quotes a --redis URL for an error without its password.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)" // its text may hold a password
	}
	return fmt.Sprintf("%q", u.Redacted())
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
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
// each with its own credentials; with permits above 1, as a semaphore. The
// clients come from redisconn, like a pod's. password is for the URLs
// that carry none. Closing the locker closes the clients.
func openRedis(urls, password, key string, permits int, opts []lock.Option) (*locker, error) {
	// Before dialing: a usage error says what is wrong with the flags,
	// not what the servers are.
	if err := checkPermits(permits, strings.Contains(urls, ",")); err != nil {
		return nil, err
	}
	d, err := dialRedis(urls, password, opts)
	if err != nil {
		return nil, err
	}
	l, err := d.bind(key, permits)
	if err != nil {
		_ = d.close()
		return nil, err
	}
	l.Close = d.close
	return l, nil
}

// redisDeployment is plain Redis opened once: one Locker over its clients,
// for any number of keys (lockctl agent serves many).
type redisDeployment struct {
	l       *lock.Locker
	clients []redis.UniversalClient
	d       description
}

// dialRedis makes the clients of --redis's URLs and a Locker over them:
// Redlock when there are several.
func dialRedis(urls, password string, opts []lock.Option) (*redisDeployment, error) {
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
		if creds.Password == "" {
			creds.Password = password
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
	return &redisDeployment{l: l, clients: clients, d: description{mode: string(mode), addresses: addrs, ready: "n/a (no DistributedLock)"}}, nil
}

// bind opens key: a mutex, or with permits above 1 a semaphore. The
// locker's Close does nothing: the deployment's close frees the clients.
func (d *redisDeployment) bind(key string, permits int) (*locker, error) {
	if err := checkPermits(permits, len(d.clients) > 1); err != nil {
		return nil, err
	}
	var (
		h       handle
		inspect func(context.Context) (inspection, error)
	)
	if permits > 1 {
		sem := d.l.Semaphore(key, permits)
		h, inspect = sem, inspectSemaphore(permits, sem.Inspect)
	} else {
		m := d.l.Mutex(key)
		h, inspect = m, inspectLock(m.Inspect)
	}
	return &locker{handle: h, inspect: inspect, describe: func() description { return d.d }, Close: func() error { return nil }}, nil
}

// checkPermits refuses a permit count out of range, and a semaphore on
// Redlock.
func checkPermits(permits int, redlock bool) error {
	switch {
	case permits < 1 || permits > lock.MaxPermits:
		return exit(ExitUsage, fmt.Errorf("--permits %d: want 1 to %d", permits, lock.MaxPermits))
	case permits > 1 && redlock:
		return exit(ExitUsage, errors.New("--permits above 1 needs one Redis deployment: on Redlock a majority of nodes per holder does not bound the holders"))
	}
	return nil
}

// close closes the Locker, then the clients.
func (d *redisDeployment) close() error {
	err := d.l.Close()
	redisconn.CloseAll(d.clients)
	if errors.Is(err, lock.ErrClosed) {
		return nil
	}
	return err
}

// redacted quotes a --redis URL for an error without its password.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)" // its text may hold a password
	}
	return fmt.Sprintf("%q", u.Redacted())
}

/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

// TestControllerSetUser: for each mode, the rendered line, pasted into
// redis-cli as it is, creates a user on a real server that can do what the
// controller does in that mode (PING, INFO, read a lock's and a
// semaphore's key, raise a fence counter, write an epoch record; CONFIG
// GET/SET with the guard; ACL SETUSER/USERS/DELUSER and COMMAND INFO
// with isolation; FUNCTION
// LIST and LOAD with functions) and is
// refused (NOPERM) what the mode leaves out, and everything else.
func TestControllerSetUser(t *testing.T) {
	t.Parallel()
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	admin := s.Client(t)
	// A lock and a semaphore to read, as pkg/lock leaves them.
	const lockKey, semKey = "jobs/nightly", "jobs/pool"
	exp := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	for _, cmd := range [][]any{
		{"set", lockKey, "holder-value", "px", 60000},
		{"set", protocol.FenceKey(lockKey), 7},
		{"zadd", protocol.LineKey(lockKey), time.Now().UnixMicro(), "waiter-value"},
		{"zadd", semKey, exp, "permit-value"},
		{"hset", protocol.HoldersKey(semKey), "permit-value", "3 " + strconv.FormatInt(time.Now().UnixMilli(), 10)},
	} {
		if err := admin.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}

	for _, modes := range []redisacl.ControllerModes{{}, {Guard: true}, {Isolation: true}, {Functions: true}, {Guard: true, Isolation: true, Cluster: true, Functions: true}} {
		t.Run(fmt.Sprintf("%+v", modes), func(t *testing.T) {
			line, err := redisacl.ControllerSetUser("s3cret-"+strconv.Itoa(s.Port()), modes)
			if err != nil {
				t.Fatal(err)
			}
			// As a user pastes it: redis-cli, its words as arguments.
			args := append([]string{"-p", strconv.Itoa(s.Port())}, strings.Fields(line)...)
			out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput() //nolint:gosec // G204: redis-cli with the line under test, as a user would run it
			if err != nil || strings.TrimSpace(string(out)) != "OK" {
				t.Fatalf("redis-cli %s: %v: %s", line, err, out)
			}
			c := tenantClient(t, s, redisacl.ControllerUser, "s3cret-"+strconv.Itoa(s.Port()))

			always := map[string]func(context.Context) error{
				"PING":   func(ctx context.Context) error { return c.Ping(ctx).Err() },
				"INFO":   func(ctx context.Context) error { return c.Info(ctx).Err() },
				"SELECT": func(ctx context.Context) error { return c.Do(ctx, "select", 0).Err() },
				"reading a lock, its line and a semaphore": readKeys(c, lockKey, semKey),
				"raising a fence counter": func(ctx context.Context) error {
					if err := admin.Set(ctx, protocol.FenceKey(lockKey), 7, 0).Err(); err != nil {
						return err
					}
					raised, err := protocol.RaiseFence(ctx, protocol.Scripts(c), lockKey, 9)
					if err == nil && !raised {
						err = fmt.Errorf("not raised from 7 to 9")
					}
					return err
				},
				"writing, then checking, an epoch record": recordEpochTwice(c, lockKey),
			}
			for what, run := range always {
				if err := run(ctx); err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
			byMode := []struct {
				on   bool
				what string
				run  func(context.Context) error
			}{
				{modes.Guard, "CONFIG GET", func(ctx context.Context) error { return c.ConfigGet(ctx, "min-replicas-to-write").Err() }},
				{modes.Guard, "CONFIG SET", func(ctx context.Context) error { return c.ConfigSet(ctx, "min-replicas-max-lag", "10").Err() }},
				{modes.Isolation, "COMMAND INFO", func(ctx context.Context) error { return c.Do(ctx, "command", "info", "spublish").Err() }},
				{modes.Isolation, "ACL SETUSER", func(ctx context.Context) error {
					return c.Do(ctx, "acl", "setuser", "redlease-test-tenant", "reset", "on", ">pw").Err()
				}},
				{modes.Isolation, "ACL USERS", func(ctx context.Context) error { return c.Do(ctx, "acl", "users").Err() }},
				{modes.Isolation, "ACL DELUSER", func(ctx context.Context) error { return c.Do(ctx, "acl", "deluser", "redlease-test-tenant").Err() }},
				{modes.Functions, "FUNCTION LIST", func(ctx context.Context) error {
					return c.Do(ctx, "function", "list", "libraryname", "redlease_*").Err()
				}},
				{modes.Functions, "FUNCTION LOAD", func(ctx context.Context) error { return protocol.LoadLibrary(ctx, c) }},
				{false, "FLUSHALL", func(ctx context.Context) error { return c.FlushAll(ctx).Err() }},
				{false, "KEYS", func(ctx context.Context) error { return c.Keys(ctx, "*").Err() }},
				{false, "SUBSCRIBE", func(ctx context.Context) error {
					ps := c.Subscribe(ctx, "{"+lockKey+"}:events")
					defer func() { _ = ps.Close() }()
					_, err := ps.Receive(ctx)
					return err
				}},
			}
			for _, tc := range byMode {
				err := tc.run(ctx)
				if tc.on {
					if err != nil {
						t.Errorf("%s: %v, want it allowed in this mode", tc.what, err)
					}
					continue
				}
				wantNoPerm(t, tc.what+" (not in this mode)", err)
			}
		})
	}
}

// TestControllerSetUserRefusesBadPasswords: a password the line could not
// carry as one word is refused, not rendered into a broken command.
func TestControllerSetUserRefusesBadPasswords(t *testing.T) {
	for _, pw := range []string{"", "two words", `quo"te`, "new\nline"} {
		if line, err := redisacl.ControllerSetUser(pw, redisacl.ControllerModes{}); err == nil {
			t.Errorf("password %q: rendered %q, want an error", pw, line)
		}
	}
}

// recordEpochTwice writes key's epoch record (the failover quarantine's)
// through c when it is missing, then checks it, as the controller does.
func recordEpochTwice(c *redis.Client, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, missingWaits := range []bool{false, true} {
			q := protocol.Quarantine{On: true, Cutoff: time.Second, MissingWaits: missingWaits}
			if _, err := protocol.RecordEpoch(ctx, protocol.Scripts(c), key, time.Second, q); err != nil {
				return err
			}
		}
		return nil
	}
}

// readKeys reads the lock (with its one waiter: a user without ZCARD reads
// no line) and the semaphore as the controller does.
func readKeys(c *redis.Client, lockKey, semKey string) func(context.Context) error {
	return func(ctx context.Context) error {
		reads, errs := protocol.ReadKeys(ctx, protocol.Scripts(c), []string{lockKey, semKey}, protocol.ReadLimits{Permits: 10, Waiters: 10})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		h, p := reads[0].Holder, reads[1].Permits
		if !h.Held || h.Line == nil || h.Line.Count != 1 || p == nil || p.Live != 1 {
			return fmt.Errorf("read %+v (line %+v, permits %+v)", reads, h.Line, p)
		}
		return nil
	}
}

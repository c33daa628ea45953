/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// statusLine is what `lockctl status -o json` says of the waiting line.
type statusLine struct {
	Holders []struct{ Identity string }
	Waiting *struct {
		Count   int
		Waiters []struct {
			Identity string
			Since    *time.Time
			Waited   string
		}
	}
}

// TestStatusListsTheWaitingLine: `lockctl status` lists who waits for a
// lock or a semaphore, by identity in arrival order with how long each has
// waited, and a semaphore's holders; never a lock value. Holders and
// waiters are Lockers of their own, on clients of their own, as pods are.
func TestStatusListsTheWaitingLine(t *testing.T) {
	tests := []struct {
		name    string
		permits int
	}{
		{"lock", 1},
		{"semaphore", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartStandalone(t)
			key := "line-" + tt.name
			var holders []string
			for i := range tt.permits {
				holders = append(holders, fmt.Sprintf("holder-%d", i))
				hold(t, srv.Client(t), key, tt.permits, holders[i])
			}
			ctx, giveUp := context.WithCancel(context.Background())
			t.Cleanup(giveUp)
			waiters := []string{"waiter-0", "waiter-1", "waiter-2"}
			for _, id := range waiters {
				wait(ctx, t, srv.Client(t), key, tt.permits, id)
				time.Sleep(100 * time.Millisecond) // arrivals in this order
			}

			args := []string{"status", "--redis", redisURL(srv), "--key", key, "--permits", strconv.Itoa(tt.permits)}
			st := lockctl(t, append(args, "-o", "json")...)
			var report statusLine
			if err := json.Unmarshal([]byte(st.stdout), &report); err != nil || st.code != 0 {
				t.Fatalf("status -o json: exit %d, %v: %q %s", st.code, err, st.stdout, st.stderr)
			}
			checkWaiters(t, report, waiters)
			table := lockctl(t, args...)
			t.Logf("lockctl status:\n%s", table.stdout)
			checkTable(t, table.stdout, "WAITING (3, in arrival order)", waiters)
			if tt.permits > 1 {
				checkTable(t, table.stdout, "HOLDERS (2 of 2 permits)", holders)
			}
			if lockValue.MatchString(st.stdout + table.stdout) {
				t.Errorf("status printed a lock value:\n%s\n%s", st.stdout, table.stdout)
			}
		})
	}
}

// TestStatusListsALongLineBounded: of 25 waiters status lists the first 20
// and counts the rest.
func TestStatusListsALongLineBounded(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	hold(t, c, "long", 1, "holder-0")
	now := time.Now().UnixMicro()
	for i := range 25 {
		v, err := protocol.NewValue(fmt.Sprintf("w-%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(t.Context(), protocol.LineKey("long"), redis.Z{Score: float64(now - int64(25-i)*1000), Member: v}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st := lockctl(t, "status", "--redis", redisURL(srv), "--key", "long", "-o", "json")
	var report statusLine
	if err := json.Unmarshal([]byte(st.stdout), &report); err != nil {
		t.Fatalf("status -o json: %v: %q %s", err, st.stdout, st.stderr)
	}
	if w := report.Waiting; w == nil || w.Count != 25 || len(w.Waiters) != 20 || w.Waiters[0].Identity != "w-00" || w.Waiters[19].Identity != "w-19" {
		t.Errorf("waiting %+v, want 25 counted, w-00 to w-19 listed", w)
	}
	table := lockctl(t, "status", "--redis", redisURL(srv), "--key", "long").stdout
	if !strings.Contains(table, "w-19") || strings.Contains(table, "w-20") || !strings.Contains(table, "and 5 more") {
		t.Errorf("table lists more or fewer than the first 20, and 5 more:\n%s", table)
	}
}

// checkWaiters: the report lists ids in arrival order, the first waiting
// longest, each with when it came and how long it has waited.
func checkWaiters(t *testing.T, report statusLine, ids []string) {
	t.Helper()
	w := report.Waiting
	if w == nil || w.Count != len(ids) {
		t.Fatalf("waiting %+v, want %d waiters", w, len(ids))
	}
	var got []string
	var last time.Duration
	for i, x := range w.Waiters {
		got = append(got, x.Identity)
		waited, err := time.ParseDuration(x.Waited)
		switch {
		case err != nil || x.Since == nil:
			t.Errorf("waiter %s: waited %q since %v", x.Identity, x.Waited, x.Since)
		case i > 0 && waited >= last:
			t.Errorf("waiter %s waited %v, not less than the one before it (%v)", x.Identity, waited, last)
		case waited > time.Minute:
			t.Errorf("waiter %s waited %v", x.Identity, waited)
		}
		last = waited
	}
	if !slices.Equal(got, ids) {
		t.Errorf("waiters %q, want %q", got, ids)
	}
}

// checkTable: the table has the section titled title listing ids in order.
func checkTable(t *testing.T, table, title string, ids []string) {
	t.Helper()
	_, section, ok := strings.Cut(table, title)
	if !ok {
		t.Fatalf("no %q in the table:\n%s", title, table)
	}
	at := -1
	for _, id := range ids {
		i := strings.Index(section, id)
		if i <= at {
			t.Fatalf("%s: %s missing or out of order:\n%s", title, id, table)
		}
		at = i
	}
}

// hold makes identity hold key (a lock, or a permit of a semaphore of
// permits) until the test ends, as a Locker of its own on c.
func hold(t *testing.T, c redis.UniversalClient, key string, permits int, identity string) {
	t.Helper()
	l := locktest.New(t, c, lock.WithIdentity(identity), lock.WithTTL(30*time.Second))
	var lease *lock.Lease
	var err error
	if permits > 1 {
		lease, err = l.Semaphore(key, permits).TryAcquire(t.Context())
	} else {
		lease, err = l.TryAcquire(t.Context(), key)
	}
	if err != nil {
		t.Fatalf("%s: %v", identity, err)
	}
	locktest.ReleaseAtEnd(t, lease)
}

// wait makes identity wait for key until ctx ends, as a Locker of its own
// on c; it returns once identity is in the line.
func wait(ctx context.Context, t *testing.T, c redis.UniversalClient, key string, permits int, identity string) {
	t.Helper()
	locktest.Contend(ctx, t, c, key, permits, identity)
	line := protocol.LineKey(key)
	if permits > 1 {
		line = protocol.PermitLineKey(key)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		members, _ := c.ZRange(t.Context(), line, 0, -1).Result()
		for _, m := range members {
			if protocol.IdentityFromValue(m) == identity {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s is not in %s's line after 10s", identity, key)
}

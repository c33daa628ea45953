/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package protocol_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// TestReadKeysIsBounded: a tenant's own ACL user, on a server that has not
// seen the read script (NOSCRIPT, then EVAL: the user may not SCRIPT
// LOAD), reads its keys: a 1 MiB value is a holder this library did not
// write, a library value names its holder and fence, a semaphore of 20
// permits (one of them a 1 MiB value) shows 16 and counts 20, and a
// counter that is not a number is an error for its key alone. The server
// sends a few KiB for all of it.
func TestReadKeysIsBounded(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := t.Context()
	c := tenantClient(t, srv, "team-a")
	writeHugeKeys(t, c)
	if err := srv.Client(t).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := sentBytes(t, srv)
	keys := []string{"team-a/big", "team-a/ours", "team-a/sem", "team-a/bad", "team-a/free"}
	reads, errs := protocol.ReadKeys(ctx, protocol.Scripts(c), keys, protocol.ReadLimits{Permits: 16})
	if d := sentBytes(t, srv) - before; d > 16<<10 {
		t.Errorf("the server sent %d bytes for the reads, want a few KiB", d)
	}
	for i, want := range []string{"<nil>", "<nil>", "<nil>", "reading \"team-a/bad\": the fence counter is not a number", "<nil>"} {
		if got := fmt.Sprint(errs[i]); got != want {
			t.Errorf("%s: error %v, want %s", keys[i], errs[i], want)
		}
	}
	if h := reads[0].Holder; !h.Held || h.Identity != "" {
		t.Errorf("1 MiB value: %+v, want held by an unrecognized value", h)
	}
	if h := reads[1].Holder; !h.Held || h.Identity != "pod-1:1" || !h.FenceSet || h.Fence != 42 || h.TTL <= 0 {
		t.Errorf("library value: %+v, want pod-1:1 with fence 42 and a TTL", h)
	}
	if p := reads[2].Permits; p == nil || p.Live != 20 || len(p.Holders) != 16 || p.Holders[0].Identity != "" || p.Holders[1].Identity != "p0" {
		t.Errorf("semaphore: %+v, want 20 live, the first 16 shown, the 1 MiB member unrecognized", p)
	}
	if r := reads[4]; r.Permits != nil || r.Holder.Held || r.Holder.FenceSet {
		t.Errorf("free key: %+v, want nothing", r)
	}
	checkWrongTypes(t, c)
}

// checkWrongTypes: ReadHolder of a semaphore's key and ReadPermits of a
// lock's are WRONGTYPE errors, as callers tell the kinds apart by them.
func checkWrongTypes(t *testing.T, c *redis.Client) {
	t.Helper()
	if _, err := protocol.ReadHolder(t.Context(), protocol.Scripts(c), "team-a/sem"); !redis.HasErrorPrefix(err, "WRONGTYPE") {
		t.Errorf("ReadHolder of a semaphore: %v, want WRONGTYPE", err)
	}
	if _, err := protocol.ReadPermits(t.Context(), protocol.Scripts(c), "team-a/ours", 0); !redis.HasErrorPrefix(err, "WRONGTYPE") {
		t.Errorf("ReadPermits of a lock: %v, want WRONGTYPE", err)
	}
}

// tenantClient connects to srv as a user with namespace ns's tenant rules.
func tenantClient(t *testing.T, srv *redistest.Server, ns string) *redis.Client {
	t.Helper()
	rules, err := protocol.TenantACLRules(ns, protocol.ACLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []any{"ACL", "SETUSER", "tenant", "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := srv.Client(t).Do(t.Context(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	return srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "tenant", "pw" })
}

// writeHugeKeys writes, as the tenant, a 1 MiB value, a library value with
// fence 42, a fence counter of 1 MiB of digits and a semaphore of 20
// permits, the first a 1 MiB value.
func writeHugeKeys(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := t.Context()
	const mib = 1 << 20
	ours, err := protocol.NewValue("pod-1:1")
	if err != nil {
		t.Fatal(err)
	}
	expiry := float64(time.Now().Add(time.Hour).UnixMilli())
	members := []redis.Z{{Score: expiry, Member: strings.Repeat("m", mib)}}
	for i := range 19 {
		v, err := protocol.NewValue("p" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, redis.Z{Score: expiry + float64(i+1), Member: v})
	}
	for _, err := range []error{
		c.Set(ctx, "team-a/big", strings.Repeat("x", mib), 0).Err(),
		c.Set(ctx, "team-a/ours", ours, time.Minute).Err(),
		c.Set(ctx, "{team-a/ours}:fence", "42", 0).Err(),
		c.Set(ctx, "{team-a/bad}:fence", strings.Repeat("9", mib), 0).Err(),
		c.ZAdd(ctx, "team-a/sem", members...).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sentBytes is what srv has sent its clients (INFO total_net_output_bytes).
func sentBytes(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Info(t.Context(), "stats")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
	return n
}

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
	admin := srv.Client(t)
	rules, err := protocol.TenantACLRules("team-a", protocol.ACLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []any{"ACL", "SETUSER", "tenant", "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	c := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "tenant", "pw" })
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
		admin.ScriptFlush(ctx).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	sent := func() int64 {
		info, err := srv.Info(ctx, "stats")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
		return n
	}
	before := sent()
	keys := []string{"team-a/big", "team-a/ours", "team-a/sem", "team-a/bad", "team-a/free"}
	reads, errs := protocol.ReadKeys(ctx, c, keys, 16)
	if d := sent() - before; d > 16<<10 {
		t.Errorf("the server sent %d bytes for the reads, want a few KiB", d)
	}
	for i, want := range []string{"", "", "", "reading \"team-a/bad\": the fence counter is not a number", ""} {
		if got := fmt.Sprint(errs[i]); want == "" && errs[i] != nil || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("%s: error %v, want %q", keys[i], errs[i], want)
		}
	}
	if h := reads[0].Holder; !h.Held || h.Identity != "" {
		t.Errorf("1 MiB value: %+v, want held by an unrecognized value", h)
	}
	if h := reads[1].Holder; !h.Held || h.Identity != "pod-1:1" || !h.FenceSet || h.Fence != 42 || h.TTL <= 0 {
		t.Errorf("library value: %+v, want pod-1:1 with fence 42 and a TTL", h)
	}
	p := reads[2].Permits
	if p == nil || p.Live != 20 || len(p.Holders) != 16 || p.Holders[0].Identity != "" || p.Holders[1].Identity != "p0" {
		t.Errorf("semaphore: %+v, want 20 live, the first 16 shown, the 1 MiB member unrecognized", p)
	}
	if h := reads[4]; h.Permits != nil || h.Holder.Held || h.Holder.FenceSet {
		t.Errorf("free key: %+v, want nothing", h)
	}
	if _, err := protocol.ReadHolder(ctx, c, "team-a/sem"); !redis.HasErrorPrefix(err, "WRONGTYPE") {
		t.Errorf("ReadHolder of a semaphore: %v, want WRONGTYPE", err)
	}
	if _, err := protocol.ReadPermits(ctx, c, "team-a/ours"); !redis.HasErrorPrefix(err, "WRONGTYPE") {
		t.Errorf("ReadPermits of a lock: %v, want WRONGTYPE", err)
	}
}

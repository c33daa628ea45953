package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// During a failover quarantine a key that survived on the new server is
// its holder's: its renewal goes through (and itself notices the new
// server), while nothing is granted — neither to a caller nor, by a
// release, to the first waiter in line, who keeps its place and gets the
// key once the quarantine has passed. Without the quarantine the same
// release hands the key over at once (the naive variant).
func TestAQuarantineGrantsNothingAndDisturbsNoHolder(t *testing.T) {
	const ttl = 400 * time.Millisecond
	q := protocol.Quarantine{On: true, Cutoff: 100 * time.Millisecond}
	for _, tt := range []struct {
		name   string
		q      protocol.Quarantine
		handed bool
	}{
		{"quarantine", q, false},
		{"no quarantine: the release hands the key over", protocol.Quarantine{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			const key = "job"
			holder, waiter := "pod-a:1/h", "pod-b:1/w"
			take := func(v string) []int64 {
				args := protocol.AcquireArgs{Value: v, TTL: ttl, Fencing: true, Identity: protocol.IdentityFromValue(v),
					Place: time.Minute, Queued: true, Window: ttl, Quarantine: tt.q}
				res, err := s.run(protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()...).Int64Slice()
				s.must(err)
				return res
			}
			if _, err := protocol.RecordEpoch(s.ctx, s.r, key, ttl, q); err != nil {
				t.Fatal(err)
			}
			if res := take(holder); res[0] != 1 {
				t.Fatalf("first acquisition = %v", res)
			}
			// The record now names another server: what a promoted
			// replica, to which the holder's key was replicated, finds.
			s.must(s.c.HSet(s.ctx, protocol.EpochKey(key), "run", "promoted-elsewhere").Err())

			renewed, err := s.run(protocol.RenewScript, protocol.RenewKeys(key), protocol.RenewArgv(holder, ttl, tt.q)...).Int()
			s.must(err)
			if renewed != 1 {
				t.Fatalf("the surviving holder's renewal = %d, want 1", renewed)
			}
			if res := take(waiter); res[0] != 0 || tt.q.On && (len(res) != 4 || res[3] <= 0) {
				t.Fatalf("the waiter's attempt = %v, want not acquired (with the quarantine left, under one)", res)
			}
			ok, err := protocol.Release(s.ctx, s.r, key, holder, protocol.ReleaseArgs{Window: ttl, TTL: ttl, Quarantine: tt.q})
			s.must(err)
			got, err := s.c.Get(s.ctx, key).Result()
			handed := err == nil && got == waiter
			if !ok || handed != tt.handed {
				t.Fatalf("release = %v, key handed to the waiter: %v (%q), want %v", ok, handed, got, tt.handed)
			}
			if tt.handed {
				return
			}
			if rank, err := s.c.ZRank(s.ctx, protocol.LineKey(key), waiter).Result(); err != nil || rank != 0 {
				t.Fatalf("the waiter's place after the release = %d, %v: want it first in line", rank, err)
			}
			time.Sleep(q.Length(ttl))
			if res := take(waiter); res[0] != 1 {
				t.Fatalf("the waiter's attempt after the quarantine = %v, want acquired", res)
			}
		})
	}
}

package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// quarantineKind runs one kind's scripts (a lock's, or a semaphore's of
// one permit) under a quarantine q (off: the zero value).
type quarantineKind struct {
	name    string
	permits int
}

func (k quarantineKind) take(s *server, key, v string, ttl time.Duration, q protocol.Quarantine) []int64 {
	s.t.Helper()
	args := protocol.AcquireArgs{Value: v, TTL: ttl, Fencing: true, Identity: protocol.IdentityFromValue(v),
		Place: time.Minute, Queued: true, Window: ttl, Permits: k.permits, Quarantine: q}
	script, keys, argv := protocol.AcquireScript, protocol.AcquireKeys(key), args.Argv()
	if k.permits > 0 {
		script, keys, argv = protocol.AcquirePermitScript, protocol.AcquirePermitKeys(key), args.PermitArgv()
	}
	res, err := ints(s.run(script, keys, argv...))
	s.must(err)
	return res
}

func (k quarantineKind) renew(s *server, key, v string, ttl time.Duration, q protocol.Quarantine) bool {
	s.t.Helper()
	script, keys := protocol.RenewScript, protocol.RenewKeys(key)
	if k.permits > 0 {
		script, keys = protocol.RenewPermitScript, protocol.RenewPermitKeys(key)
	}
	n, err := s.run(script, keys, protocol.RenewArgv(v, ttl, q)...).Int()
	s.must(err)
	return n == 1
}

func (k quarantineKind) give(s *server, key, v string, a protocol.ReleaseArgs) bool {
	s.t.Helper()
	var ok bool
	var err error
	if k.permits > 0 {
		ok, err = protocol.ReleasePermit(s.ctx, s.r, key, v, k.permits, a)
	} else {
		ok, err = protocol.Release(s.ctx, s.r, key, v, a)
	}
	s.must(err)
	return ok
}

// handed says the key (or a permit) is v's.
func (k quarantineKind) handed(s *server, key, v string) bool {
	s.t.Helper()
	if k.permits > 0 {
		_, err := s.c.ZScore(s.ctx, key, v).Result()
		return err == nil
	}
	got, err := s.c.Get(s.ctx, key).Result()
	return err == nil && got == v
}

func (k quarantineKind) line(key string) string {
	if k.permits > 0 {
		return protocol.PermitLineKey(key)
	}
	return protocol.LineKey(key)
}

// During a failover quarantine a key (or a permit) that survived on the
// new server is its holder's: its renewal goes through (and itself
// notices the new server), while nothing is granted — neither to a caller
// nor, by a release, to the first waiter in line, who keeps its place and
// gets it once the quarantine has passed. Without the quarantine the same
// release hands it over at once (the naive variant).
func TestAQuarantineGrantsNothingAndDisturbsNoHolder(t *testing.T) {
	const ttl = 400 * time.Millisecond
	q := protocol.Quarantine{On: true, Cutoff: 100 * time.Millisecond}
	for _, kind := range []quarantineKind{{"lock", 0}, {"semaphore", 1}} {
		for _, tt := range []struct {
			name   string
			q      protocol.Quarantine
			handed bool
		}{
			{"quarantine", q, false},
			{"no quarantine: the release hands over", protocol.Quarantine{}, true},
		} {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				s := newServer(t)
				const key = "job"
				holder, waiter := "pod-a:1/h", "pod-b:1/w"
				if _, err := protocol.RecordEpoch(s.ctx, s.r, key, ttl, q); err != nil {
					t.Fatal(err)
				}
				if res := kind.take(s, key, holder, ttl, tt.q); res[0] != 1 {
					t.Fatalf("first acquisition = %v", res)
				}
				// The record now names another server: what a promoted
				// replica, to which the holder's key was replicated, finds.
				s.must(s.c.HSet(s.ctx, protocol.EpochKey(key), "run", "promoted-elsewhere").Err())
				if !kind.renew(s, key, holder, ttl, tt.q) {
					t.Fatal("the surviving holder's renewal failed")
				}
				if res := kind.take(s, key, waiter, ttl, tt.q); res[0] != 0 || tt.q.On && (len(res) != 5 || res[3] <= 0) {
					t.Fatalf("the waiter's attempt = %v, want not acquired (with the quarantine left, under one)", res)
				}
				ok := kind.give(s, key, holder, protocol.ReleaseArgs{Window: ttl, TTL: ttl, Quarantine: tt.q})
				if handed := kind.handed(s, key, waiter); !ok || handed != tt.handed {
					t.Fatalf("release = %v, handed to the waiter: %v, want %v", ok, handed, tt.handed)
				}
				if tt.handed {
					return
				}
				if rank, err := s.c.ZRank(s.ctx, kind.line(key), waiter).Result(); err != nil || rank != 0 {
					t.Fatalf("the waiter's place after the release = %d, %v: want it first in line", rank, err)
				}
				time.Sleep(q.Length(ttl))
				if res := kind.take(s, key, waiter, ttl, tt.q); res[0] != 1 {
					t.Fatalf("the waiter's attempt after the quarantine = %v, want acquired", res)
				}
			})
		}
	}
}

// Only grants size the quarantine (protocol 6): a waiter whose TTL is
// longer than the holder's tries and fails, and the epoch record keeps the
// holder's TTL, so a failover then quarantines the key for that TTL (plus
// the cutoff), not the waiter's. Once the waiter holds the key, its TTL is
// recorded. Protocol 5 recorded every attempt's TTL: a waiter that never
// held lengthened every later quarantine.
func TestOnlyGrantsSizeTheQuarantine(t *testing.T) {
	for _, kind := range []quarantineKind{{"lock", 0}, {"semaphore", 1}} {
		t.Run(kind.name, func(t *testing.T) {
			s := newServer(t)
			const key = "job"
			q := protocol.Quarantine{On: true, Cutoff: time.Second}
			if _, err := protocol.RecordEpoch(s.ctx, s.r, key, time.Second, q); err != nil {
				t.Fatal(err)
			}
			recorded := func() string {
				t.Helper()
				v, err := s.c.HGet(s.ctx, protocol.EpochKey(key), "ttl").Result()
				s.must(err)
				return v
			}
			holder, waiter := value(t, "holder:1"), value(t, "waiter:1")
			expect(t, kind.take(s, key, holder, time.Second, q)[0], 1, "the holder's acquire")
			res := kind.take(s, key, waiter, time.Minute, q)
			expect(t, res[0], 0, "the waiter's attempt")
			expect(t, res[4], 1000, "the recorded TTL its reply reports (a Locker with another TTL warns)")
			expect(t, recorded(), "1000", "the record's TTL after the waiter's attempt")

			expect(t, kind.give(s, key, holder, protocol.ReleaseArgs{Window: time.Second, TTL: time.Second, Quarantine: q}), true, "the holder's release")
			expect(t, kind.take(s, key, waiter, time.Minute, q)[0], 1, "the waiter confirming its hand-off")
			expect(t, recorded(), "60000", "the record's TTL once the waiter holds")
		})
	}
}

// The quarantine holds keys taken together as it holds one: a release of
// the set hands a key whose server changed to nobody (its waiter keeps its
// place) while it hands the other key on, and no set that includes that key
// is granted until the quarantine has passed. Without the quarantine the
// same release hands both keys over at once (the naive variant).
func TestAQuarantineHoldsKeysTakenTogether(t *testing.T) {
	const ttl = 400 * time.Millisecond
	q := protocol.Quarantine{On: true, Cutoff: 100 * time.Millisecond}
	for _, tt := range []struct {
		name   string
		q      protocol.Quarantine
		handed bool
	}{
		{"quarantine", q, false},
		{"no quarantine: the release hands both over", protocol.Quarantine{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			keys := []string{"debit", "credit"}
			for _, k := range keys {
				if _, err := protocol.RecordEpoch(s.ctx, s.r, k, ttl, q); err != nil {
					t.Fatal(err)
				}
			}
			take := func(v string, ks []string, wait bool) []int64 {
				t.Helper()
				a := protocol.AcquireArgs{Value: v, TTL: ttl, Fencing: true, Identity: protocol.IdentityFromValue(v),
					Place: time.Minute, Queued: true, Window: ttl, Quarantine: tt.q}
				c := protocol.AcquireAllCall(ks, a)
				if wait {
					c = protocol.AcquireAllWaitCall(ks, a)
				}
				res, err := ints(s.run(c.Script, c.Keys, c.Args...))
				s.must(err)
				return res
			}
			holder, waiter := "pod-a:1/h", "pod-b:1/w"
			if res := take(holder, keys, false); res[0] != 1 {
				t.Fatalf("the holder's set = %v", res)
			}
			s.must(s.c.HSet(s.ctx, protocol.EpochKey("debit"), "run", "promoted-elsewhere").Err())
			if res := take(waiter, keys, true); res[0] != 0 {
				t.Fatalf("the waiter's attempt = %v, want not acquired", res)
			}
			released, err := protocol.ReleaseAll(s.ctx, s.r, keys, holder, protocol.ReleaseArgs{Window: ttl, TTL: ttl, Quarantine: tt.q})
			s.must(err)
			if !released[0] || !released[1] {
				t.Fatalf("released %v, want both", released)
			}
			debit, credit := s.c.Exists(s.ctx, "debit").Val() == 1, s.c.Exists(s.ctx, "credit").Val() == 1
			if debit != tt.handed || !credit {
				t.Fatalf("after the release debit is reserved: %v (want %v), credit: %v (want true)", debit, tt.handed, credit)
			}
			if tt.handed {
				return
			}
			if rank, err := s.c.ZRank(s.ctx, protocol.LineKey("debit"), waiter).Result(); err != nil || rank != 0 {
				t.Fatalf("the waiter's place in debit's line = %d, %v: want it first", rank, err)
			}
			if res := take("pod-c:1/x", []string{"debit", "other"}, false); res[0] != 0 || res[2] <= 0 {
				t.Fatalf("another set with debit during the quarantine = %v, want not acquired, with the quarantine left", res)
			}
			time.Sleep(q.Length(ttl))
			if res := take(waiter, keys, true); res[0] != 1 {
				t.Fatalf("the waiter's attempt after the quarantine = %v, want acquired", res)
			}
		})
	}
}

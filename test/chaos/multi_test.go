package chaos

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// A holder of two keys taken all or none (TryAcquireAll) loses one of
// them mid-hold: a helper process takes {a, b}, reads both ledgers, and is
// SIGSTOPped before writing; meanwhile key a is lost (deleted from
// outside, as an eviction or a failover would) and a successor takes a and
// increments ledger a with its fence. Resumed within b's TTL, the holder
// writes both ledgers with the fences of its keys. redlease: its write to
// a is refused (the successor's fence is higher), its write to b accepted
// (b was still its, its fence still the newest), and no increment is
// lost. Naive: the same holder writing without fences overwrites the
// successor's increment of a; the checker finds the lost update.
func TestAMultiKeyHolderThatLosesOneKey(t *testing.T) {
	variants(t, "redlease", "writes without fences", time.Minute, func(t *testing.T, s *scenario) {
		srv, storeSrv := redistest.StartStandalone(t), redistest.StartStandalone(t)
		ctx := s.ctx
		env := map[string]string{"REDIS": srv.Addr(), "STORE": storeSrv.Addr(), "KEY": "accounts", "TTL": "2s"}
		if s.naive {
			env["NAIVE"] = "1"
		}
		holder := s.pausedHelper("multi-writer", env)
		if err := srv.Client(t).Del(ctx, "accounts:a").Err(); err != nil {
			t.Fatal(err)
		}
		succ := newLocker(t, srv.Client(t), lock.WithIdentity("successor"))
		lease, err := succ.TryAcquire(ctx, "accounts:a")
		if err != nil {
			t.Fatalf("the successor, once key a was lost: %v", err)
		}
		store := storeSrv.Client(t)
		if s.naive {
			err = store.Set(ctx, "ledger-a", 1, 0).Err()
		} else {
			err = fence.NewRedisStore(store, "").Write(ctx, "ledger-a", lease.Fence(), "1")
		}
		if err != nil {
			t.Fatal(err)
		}
		s.h.Write(Write{Client: "successor", Resource: "ledger-a", Fence: lease.Fence(), At: Mono(), Accepted: true})
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}

		holder.signal(syscall.SIGCONT)
		var late []Write
		for range 2 {
			w := holder.next(t, "write", 10*time.Second)
			s.h.Write(*w.Write)
			late = append(late, *w.Write)
		}
		for _, res := range []string{"ledger-a", "ledger-b"} {
			var counter string
			if s.naive {
				counter = store.Get(ctx, res).Val()
			} else {
				_, counter, _ = fence.NewRedisStore(store, "").Read(ctx, res)
			}
			writes := slices.DeleteFunc(s.h.Writes(), func(w Write) bool { return w.Resource != res })
			if res == "ledger-b" { // nobody else wrote b: no variant loses an update there
				expectClean(t, "S4 (ledger-b)", LostUpdates(writes, counter))
				continue
			}
			s.check("S4 (ledger-a)", LostUpdates(writes, counter))
		}
		if !s.naive {
			expectClean(t, "S2", StaleAccepted(s.h.Writes()))
			if late[0].Accepted || !late[1].Accepted {
				t.Fatalf("late writes accepted: a %v, b %v; want a refused (lost key), b accepted (still held)", late[0].Accepted, late[1].Accepted)
			}
		}
	})
}

// multiWriter takes KEY:a and KEY:b all or none, reads ledger-a and
// ledger-b, announces the write (the test SIGSTOPs it there), then
// increments both, with each key's fence (NAIVE: plain SETs), reporting
// each write.
func multiWriter(ctx context.Context, client *redis.Client, key string, ttl time.Duration, naive bool) int {
	store := redis.NewClient(&redis.Options{Addr: os.Getenv("STORE")})
	defer func() { _ = store.Close() }() // the helper process exits next; its connections go with it
	id := "multi-" + strconv.Itoa(os.Getpid())
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithIdentity(id))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // the process exits next
	m, err := l.TryAcquireAll(ctx, key+":a", key+":b")
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	fs := fence.NewRedisStore(store, "")
	resources := []string{"ledger-a", "ledger-b"}
	values := make([]int, len(resources))
	for i, res := range resources {
		if naive {
			values[i], _ = store.Get(ctx, res).Int()
		} else {
			_, v, _ := fs.Read(ctx, res)
			values[i], _ = strconv.Atoi(v)
		}
	}
	emit(event{Kind: "about-to-write"})
	time.Sleep(100 * time.Millisecond) // preparing the writes: the pause lands here
	for i, res := range resources {
		f := m.Fences()[i]
		if naive {
			err = store.Set(ctx, res, values[i]+1, 0).Err()
		} else {
			err = fs.Write(ctx, res, f, strconv.Itoa(values[i]+1))
		}
		if err != nil && !errors.Is(err, fence.ErrStale) {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		emit(event{Kind: "write", Write: &Write{Client: id, Resource: res, Fence: f, At: Mono(), Accepted: err == nil}})
	}
	return 0
}

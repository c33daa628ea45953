package chaos

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// Read/write locks under a pause: a reader process holds a key shared and
// is SIGSTOPped for 3 s (TTL 600 ms) while a writer process waits and two
// more reader processes come and go (three short reads each, done well
// before the pause ends). redlease: the writer gets the key
// once the paused reader's TTL has run out, and by then the paused
// reader's claim has ended at its local deadline; no exclusive claim
// overlaps another claim. Naive: a reader count (INCR, DECR, an expiry the
// reader refreshes) and a writer that waits for the count to reach 0: the
// paused reader's count expires, the writer goes in, and the reader, which
// has no deadline, still believes; the checker finds the overlap.
func TestAPausedReaderPastItsTTLWhileAWriterWaits(t *testing.T) {
	variants(t, "redlease", "naive reader count without a deadline", time.Minute, func(t *testing.T, s *scenario) {
		srv := redistest.StartStandalone(t)
		role := "rw-loop"
		if s.naive {
			role = "naive-rw-loop"
		}
		env := func(shared bool, hold, rounds string) map[string]string {
			return map[string]string{"REDIS": srv.Addr(), "KEY": "rw", "TTL": "600ms", "SHARED": map[bool]string{true: "1", false: "0"}[shared],
				"HOLD": hold, "ROUNDS": rounds}
		}
		paused := s.startPermitWorker(role, env(true, "5s", "1"))
		waitFor(t, 10*time.Second, "the reader to hold", paused.holding.Load)
		paused.h.signal(syscall.SIGSTOP)
		writer := s.startPermitWorker(role, env(false, "300ms", "3"))
		readers := []*permitWorker{s.startPermitWorker(role, env(true, "", "3")), s.startPermitWorker(role, env(true, "", "3"))}
		time.Sleep(3 * time.Second)
		paused.h.signal(syscall.SIGCONT)
		for _, w := range append(readers, writer) {
			select {
			case <-w.done:
			case <-time.After(30 * time.Second):
				t.Fatal("a helper did not finish its rounds")
			}
		}
		paused.kill()
		claims := s.h.Claims()
		var exclusive int
		for _, c := range claims {
			if !c.Shared {
				exclusive++
			}
		}
		if exclusive < 3 {
			t.Fatalf("%d exclusive claims, want the writer's 3", exclusive)
		}
		s.check("S1 (a writer alone)", Overlaps(claims))
	})
}

// rwLoop takes key shared (or exclusively) with redlease ROUNDS times,
// holding each holdTime, reporting claims as permitLoop does.
func rwLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration, shared bool) int {
	id := "rw-" + strconv.Itoa(os.Getpid())
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithIdentity(id))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // nothing is held by then; the process exits next
	take := l.Acquire
	if shared {
		take = l.AcquireShared
	}
	for i := 0; permitRounds() == 0 || i < permitRounds(); i++ {
		lease, err := take(ctx, key)
		if err != nil {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		c := Claim{Client: id, Key: key, Fence: lease.Fence(), Shared: shared, From: Mono(), Until: MonoAt(lease.ValidUntil())}
		emit(event{Kind: "holding", Claim: &c})
		for end := time.Now().Add(holdTime()); time.Now().Before(end) && lease.Err() == nil; {
			time.Sleep(5 * time.Millisecond)
			if u := MonoAt(lease.ValidUntil()); u > c.Until+int64(time.Millisecond) { // renewed
				c.Until = u
				emit(event{Kind: "holding", Claim: &c})
			}
		}
		c.Until = min(Mono(), MonoAt(lease.ValidUntil()))
		emit(event{Kind: "claim", Claim: &c})
		_ = lease.Release(ctx) // ErrLeaseLost after a pause past the deadline: the claim above ended there
	}
	return 0
}

// naiveRWLoop is the read/write lock of many blog posts: a reader INCRs
// "<key>:readers" once no writer holds "<key>:writer", refreshes the
// count's expiry while it reads and DECRs it at the end; a writer takes
// "<key>:writer" with SET NX PX and waits for the count to reach 0. A
// holder believes until it lets go: it has no local deadline.
func naiveRWLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration, shared bool) int {
	id := "naive-rw-" + strconv.Itoa(os.Getpid())
	readers, writer := key+":readers", key+":writer"
	for i := 0; permitRounds() == 0 || i < permitRounds(); i++ {
		if shared {
			for client.Exists(ctx, writer).Val() == 1 {
				time.Sleep(5 * time.Millisecond)
			}
			client.Incr(ctx, readers)
		} else {
			for !client.SetNX(ctx, writer, id, ttl).Val() {
				time.Sleep(5 * time.Millisecond)
			}
			for n, _ := client.Get(ctx, readers).Int(); n > 0; n, _ = client.Get(ctx, readers).Int() {
				time.Sleep(5 * time.Millisecond)
			}
		}
		c := Claim{Client: id, Key: key, Shared: shared, From: Mono(), Until: Mono() + int64(time.Hour)}
		emit(event{Kind: "holding", Claim: &c})
		for end := time.Now().Add(holdTime()); time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			if shared {
				client.PExpire(ctx, readers, ttl)
			} else {
				client.PExpire(ctx, writer, ttl)
			}
		}
		c.Until = Mono()
		emit(event{Kind: "claim", Claim: &c})
		if shared {
			client.Decr(ctx, readers)
		} else {
			client.Del(ctx, writer)
		}
	}
	return 0
}

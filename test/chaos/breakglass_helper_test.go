package chaos

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// breakGlassHolder holds the lock with its watchdog renewing, reads a
// counter from the fenced store at STORE and announces it is about to
// write; it writes the counter plus one with its fence only when the test
// sends SIGUSR1 (after breaking the glass and letting the successor write),
// whatever it knows of its lease by then: a write already under way, as a
// stuck process's would be. It reports the write, then its claim when the
// lease ends.
func breakGlassHolder(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	store := redis.NewClient(&redis.Options{Addr: os.Getenv("STORE")})
	defer func() { _ = store.Close() }() // the helper process exits next; its connections go with it
	write := make(chan os.Signal, 1)
	signal.Notify(write, syscall.SIGUSR1)
	id := "holder-" + strconv.Itoa(os.Getpid())
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithIdentity(id), lock.WithFencing(true))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // the lease has ended by then (see Done) and the process exits next
	lease, err := l.TryAcquire(ctx, key)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	from := Mono()
	fs := fence.NewRedisStore(store, "")
	_, v, err := fs.Read(ctx, "ledger") // read-modify-write of a counter
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	n, _ := strconv.Atoi(v)
	emit(event{Kind: "about-to-write"})
	<-write
	werr := fs.Write(ctx, "ledger", lease.Fence(), strconv.Itoa(n+1))
	emit(event{Kind: "write", Write: &Write{Client: id, Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: werr == nil}})
	<-lease.Done()
	// Its claim runs to its local deadline, even when it learned of the
	// loss earlier: the stricter record for redlease's run.
	emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: MonoAt(lease.ValidUntil())}, Ended: context.Cause(lease.Context()).Error()})
	return 0
}

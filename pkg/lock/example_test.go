package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

func Example() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	locker, err := lock.New(client, lock.WithTTL(10*time.Second), lock.WithIdentity("worker-1"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // bounds the wait only
	defer cancel()
	lease, err := locker.Acquire(ctx, "example/settlement")
	if err != nil {
		panic(err)
	}
	defer func() {
		// An error here (ErrLeaseLost) means the lease ended before the work did.
		if err := lease.Release(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	// Do the work under lease.Context(): it is cancelled the moment the lease
	// ends, and pass lease.Fence() to the store that receives the result.
	fmt.Println("holding", lease.Key(), "fenced:", lease.Fence() > 0, "ended:", lease.Err() != nil)
	// Output: holding example/settlement fenced: true ended: false
}

func ExampleLocker_TryAcquire() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	a, _ := lock.New(client, lock.WithIdentity("a"))
	b, _ := lock.New(client, lock.WithIdentity("b"))
	defer func() {
		if err := errors.Join(b.Close(), a.Close()); err != nil {
			log.Print(err)
		}
	}()
	ctx := context.Background()

	lease, err := a.TryAcquire(ctx, "example/try")
	if err != nil {
		panic(err)
	}
	_, err = b.TryAcquire(ctx, "example/try")
	var held *lock.NotAcquiredError
	fmt.Println(errors.Is(err, lock.ErrNotAcquired), errors.As(err, &held) && held.HolderTTL > 0)

	fmt.Println(lease.Release(ctx))
	// Output:
	// true true
	// <nil>
}

func ExampleLease_Done() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	// Without the watchdog a lease ends at its local deadline.
	locker, _ := lock.New(client, lock.WithTTL(50*time.Millisecond), lock.WithoutWatchdog())
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()

	lease, err := locker.TryAcquire(context.Background(), "example/done")
	if err != nil {
		panic(err)
	}
	<-lease.Done()
	fmt.Println(errors.Is(lease.Err(), lock.ErrLeaseLost))
	fmt.Println(errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost))
	// Output:
	// true
	// true
}

func ExampleLocker_Mutex() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	locker, err := lock.New(client, lock.WithIdentity("worker-2"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()
	ctx := context.Background()

	settle := locker.Mutex("example/mutex") // bound to its key: pass it around
	lease, err := settle.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	h, err := settle.Inspect(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(lease.Key(), "held by", lease.Identity(), "- Redis agrees:", h.Held && h.Identity == lease.Identity())
	fmt.Println(lease.Release(ctx))
	// Output:
	// example/mutex held by worker-2 - Redis agrees: true
	// <nil>
}

func ExampleLocker_Semaphore() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	locker, err := lock.New(client, lock.WithIdentity("worker-3"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()
	ctx := context.Background()

	exports := locker.Semaphore("example/exports", 2) // at most 2 exports at once, across every process
	first, err := exports.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	second, err := exports.Acquire(ctx) // every Acquire takes a permit of its own
	if err != nil {
		panic(err)
	}
	_, err = exports.TryAcquire(ctx)
	fmt.Println("third:", errors.Is(err, lock.ErrNotAcquired))
	fmt.Println("fences increase across permits:", second.Fence() > first.Fence())
	h, err := exports.Inspect(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Held(), "held, by", h.Holders[0].Identity)
	fmt.Println(first.Release(ctx), second.Release(ctx))
	// Output:
	// third: true
	// fences increase across permits: true
	// 2 held, by worker-3
	// <nil> <nil>
}

func ExampleLocker_TryAcquireAll() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	locker, err := lock.New(client, lock.WithIdentity("transfer-1"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()
	ctx := context.Background()

	// Both accounts or neither, in one round trip: no deadlock with a
	// transfer that names them in the other order.
	both, err := locker.TryAcquireAll(ctx, "example/account-7", "example/account-9")
	if err != nil {
		panic(err)
	}
	fmt.Println("fences:", len(both.Fences()))
	_, err = locker.TryAcquireAll(ctx, "example/account-9", "example/account-3")
	var held *lock.NotAcquiredError
	fmt.Println("held:", errors.As(err, &held) && held.Key == "example/account-9")
	fmt.Println(both.Release(ctx))
	// Output:
	// fences: 2
	// held: true
	// <nil>
}

func ExampleLocker_AcquireShared() {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	locker, err := lock.New(client, lock.WithIdentity("catalog-1"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			log.Print(err)
		}
	}()
	ctx := context.Background()

	// Two readers at once; a writer is kept out until both let go.
	r1, err := locker.AcquireShared(ctx, "example/catalog")
	if err != nil {
		panic(err)
	}
	r2, err := locker.AcquireShared(ctx, "example/catalog")
	if err != nil {
		panic(err)
	}
	fmt.Println("one generation:", r1.Fence() == r2.Fence())
	_, err = locker.TryAcquire(ctx, "example/catalog")
	fmt.Println("writer kept out:", errors.Is(err, lock.ErrNotAcquired))
	_, err = r1.Upgrade(ctx)
	fmt.Println("upgrade beside a reader:", errors.Is(err, lock.ErrUpgradeContended))
	fmt.Println(r2.Release(ctx))
	w, err := r1.Upgrade(ctx) // the last reader becomes the writer, never letting go
	if err != nil {
		panic(err)
	}
	fmt.Println("writer fence above:", w.Fence() > r1.Fence())
	fmt.Println(w.Release(ctx))
	// Output:
	// one generation: true
	// writer kept out: true
	// upgrade beside a reader: true
	// <nil>
	// writer fence above: true
	// <nil>
}

// serveCatalog is docs/library.md's shared-hold snippet (TestGoSnippets
// compares them).
func serveCatalog(ctx context.Context, locker *lock.Locker) error {
	snapshot, err := locker.AcquireShared(ctx, "catalog") // beside other readers, never beside a writer
	if err != nil {
		return err
	}
	defer snapshot.Release(context.Background())       //nolint:errcheck // as in goService
	return serve(snapshot.Context(), snapshot.Fence()) // the writers' generation it reads
}

// serve stands for reading a resource as of the generation fence.
func serve(ctx context.Context, fence uint64) error { return settle(ctx, fence) }

// transfer is docs/library.md's several-keys snippet (TestGoSnippets
// compares them).
func transfer(ctx context.Context, locker *lock.Locker, from, to string) error {
	both, err := locker.TryAcquireAll(ctx, "accounts/"+from, "accounts/"+to) // both or neither
	if err != nil {
		return err // a *NotAcquiredError names the key that was held
	}
	defer both.Release(context.Background()) //nolint:errcheck // as in goService
	return move(both.Context(), both.Fences())
}

// move stands for work on two resources, each written with its key's fence.
func move(ctx context.Context, fences []uint64) error { return settle(ctx, fences[0]) }

// goService is the Go code of docs/library.md's "A lock in a Go service",
// as the page shows it (test/docs's TestGoSnippets compares them), so that
// it compiles.
func goService(ctx context.Context) error {
	client := redis.NewClient(&redis.Options{Addr: "redis:6379"})
	locker, err := lock.New(client, lock.WithTTL(10*time.Second))
	if err != nil {
		return err
	}
	defer locker.Close() //nolint:errcheck // the page's snippet stays short; Example shows the errors handled

	lease, err := locker.Acquire(ctx, "nightly-settlement") // ctx bounds the wait only
	if err != nil {
		return err
	}
	defer lease.Release(context.Background()) //nolint:errcheck // as above

	// Bind the work to the lease: its context ends the moment the lease does.
	return settle(lease.Context(), lease.Fence())
}

// settle stands for the work done under the lock: it stops when ctx ends
// and sends fence with every write, so the store refuses a late one.
func settle(ctx context.Context, fence uint64) error {
	_, _ = ctx, fence
	return nil
}

// semaphore is docs/library.md's semaphore snippet (TestGoSnippets
// compares them).
func semaphore(ctx context.Context, locker *lock.Locker) error {
	exports := locker.Semaphore("billing/exports", 3) // at most 3 at once, across every process using 3
	lease, err := exports.Acquire(ctx)                // one permit, a *lock.Lease
	if err != nil {
		return err
	}
	defer lease.Release(context.Background()) //nolint:errcheck // as in goService
	return export(lease.Context(), lease.Fence())
}

// export stands for work that at most n processes may do at once.
func export(ctx context.Context, fence uint64) error { return settle(ctx, fence) }

// Compiled, not run: they need a Redis at redis:6379.
var _, _, _, _ = goService, semaphore, transfer, serveCatalog

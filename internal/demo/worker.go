package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// event is one line a worker prints for the demo's table.
type event struct {
	Worker   string `json:"worker"`
	Kind     string `json:"kind"` // acquired, about-to-write, write, released, lost, error
	Fence    uint64 `json:"fence,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

func say(e event) {
	b, _ := json.Marshal(e)
	fmt.Println(string(b))
}

// increment is the protected work: read the ledger counter, take a while,
// write counter+1 with the fence. A late write is refused by the store.
func increment(ctx context.Context, store *fence.RedisStore, worker, ns string, token uint64, work time.Duration) {
	_, v, err := store.Read(ctx, ledgerKey(ns))
	if err != nil {
		say(event{Worker: worker, Kind: "error", Detail: err.Error()})
		return
	}
	n, _ := strconv.Atoi(v)
	say(event{Worker: worker, Kind: "about-to-write", Fence: token})
	time.Sleep(work) // the demo may SIGSTOP us here, past our TTL
	err = store.Write(ctx, ledgerKey(ns), token, strconv.Itoa(n+1))
	if err != nil && !errors.Is(err, fence.ErrStale) {
		say(event{Worker: worker, Kind: "error", Detail: err.Error()})
		return
	}
	say(event{Worker: worker, Kind: "write", Fence: token, Accepted: err == nil})
}

// runWorker is a library worker: pkg/kube locks through the DistributedLock,
// in a loop, until killed, or for rounds acquisitions when rounds > 0. Each
// round increments the ledger once, taking work between its read and its
// write. Without a kubeconfig it uses the in-cluster config (in a pod:
// its service account).
func runWorker(name, kubeconfig, namespace, lockName, storeAddr string, rounds int, work time.Duration) int {
	// SIGTERM (the demo's stop) ends a wait for the lock, never a round:
	// a write that reached the ledger is always reported, so the summary
	// can count the ledger against the reports.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	l, err := podLocker(ctx, kubeconfig, namespace, lockName, lock.WithIdentity(name))
	if err != nil {
		say(event{Worker: name, Kind: "error", Detail: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }()
	rc := redis.NewClient(&redis.Options{Addr: storeAddr})
	defer func() { _ = rc.Close() }()
	store := fence.NewRedisStore(rc, "")
	for done := 0; (rounds == 0 || done < rounds) && ctx.Err() == nil; {
		lease, err := l.Acquire(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			say(event{Worker: name, Kind: "error", Detail: err.Error()})
			time.Sleep(500 * time.Millisecond)
			continue
		}
		done++
		say(event{Worker: name, Kind: "acquired", Fence: lease.Fence()})
		round := context.WithoutCancel(ctx)
		increment(round, store, name, namespace, lease.Fence(), work)
		if err := lease.Release(round); errors.Is(err, lock.ErrLeaseLost) {
			say(event{Worker: name, Kind: "lost", Fence: lease.Fence(), Detail: err.Error()})
		} else {
			say(event{Worker: name, Kind: "released", Fence: lease.Fence()})
		}
		time.Sleep(100 * time.Millisecond) // let others in
	}
	return 0
}

// runWriteOnce is the command lockctl runs: one increment of namespace's
// ledger with LOCK_FENCE.
func runWriteOnce(name, namespace, storeAddr string) int {
	// lockctl forwards the demo's SIGTERM; the one round finishes first,
	// so that a write that reached the ledger is reported.
	signal.Ignore(syscall.SIGTERM)
	token, err := strconv.ParseUint(os.Getenv("LOCK_FENCE"), 10, 64)
	if err != nil {
		say(event{Worker: name, Kind: "error", Detail: "no LOCK_FENCE: " + err.Error()})
		return 1
	}
	say(event{Worker: name, Kind: "acquired", Fence: token})
	rc := redis.NewClient(&redis.Options{Addr: storeAddr})
	defer func() { _ = rc.Close() }()
	increment(context.Background(), fence.NewRedisStore(rc, ""), name, namespace, token, 200*time.Millisecond)
	say(event{Worker: name, Kind: "released", Fence: token})
	return 0
}
